"""Precision of `tfpilot lint` on real code that tfpilot's authors did not write.

The labels in ``benchmarks/lint_labels.csv`` (repository, commit, path, line, rule, label, why)
were made by reading the code at each finding. Labels: ``tp`` (the finding is right and worth
acting on), ``debatable`` (right in letter, harmless in that code), ``fp`` (wrong).

Two steps, both offline once the repositories are on disk:

    # 1. export a checkout (a work tree, or a bare git dir via --git-dir) to plain .py files;
    #    notebook code cells become one .py per notebook (shell/magic lines commented out)
    python benchmarks/lint_precision.py export --git-dir /work/.mirror/tensorflow+docs/repo \\
        --repository tensorflow/docs /tmp/corpora/tensorflow+docs

    # 2. lint the exported trees and re-score the labels against today's findings
    python benchmarks/lint_precision.py score /tmp/corpora

``score`` expects one directory per repository, named owner+name, under the given root.
It prints: findings per rule on the corpora, how many labelled findings still fire, strict
precision (tp / labelled-and-firing) and lenient precision ((tp + debatable) / same), and the
labelled findings that no longer fire (fixed false positives count as gone, not as errors).
The corpora's code never enters this repository: only paths, lines and verdicts do.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

LABELS = Path(__file__).with_name("lint_labels.csv")
FIELDS = ["repository", "commit", "path", "line", "rule", "label", "why"]


def notebook_to_python(text: str) -> str:
    """Code cells joined in order. IPython-only lines (!shell, %magic) are commented out so
    the line numbers of every other line are kept and the file still parses."""
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError:
        return ""
    chunks: list[str] = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        lines = "".join(source).splitlines() if isinstance(source, list) else str(source).splitlines()
        chunks.append("\n".join("# " + line if line.lstrip().startswith(("!", "%")) else line for line in lines))
    return "\n\n".join(chunks) + "\n"


def export(git_dir: Path, repository: str, destination: Path) -> int:
    commit = subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    # ls-tree + cat-file rather than `git archive`: mirrors may list their largest blobs without
    # holding them, and archive aborts on the first absent blob. Those files are skipped, by name.
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", "HEAD"], check=True, capture_output=True
    ).stdout.decode("utf-8", errors="replace")
    wanted: list[tuple[str, str]] = []
    for entry in filter(None, listing.split("\0")):
        meta, name = entry.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode != "120000" and name.endswith((".py", ".ipynb")):
            wanted.append((sha, name))
    batch = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha, _ in wanted).encode(),
        check=True,
        capture_output=True,
    ).stdout
    destination.mkdir(parents=True, exist_ok=True)
    count = 0
    missing: list[str] = []
    position = 0
    for _sha, name in wanted:
        header_end = batch.index(b"\n", position)
        header = batch[position:header_end].split()
        position = header_end + 1
        if header[-1] == b"missing":
            missing.append(name)
            continue
        size = int(header[2])
        data = batch[position : position + size]
        position += size + 1
        if name.endswith(".ipynb"):
            target = destination / (name + ".py")
            data = notebook_to_python(data.decode("utf-8", errors="replace")).encode()
        else:
            target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        count += 1
    (destination.parent / f"{destination.name}.commit").write_text(commit + "\n")
    print(f"{repository}@{commit[:12]}: {count} files -> {destination}")
    if missing:
        print(f"skipped {len(missing)} file(s) absent from the git dir: {', '.join(missing)}")
    return 0


def lint_tree(root: Path) -> list[dict[str, str]]:
    """Run the real CLI (JSON output) on every owner+name directory under root."""
    findings: list[dict[str, str]] = []
    for tree in sorted(p for p in root.iterdir() if p.is_dir() and "+" in p.name):
        result = subprocess.run(
            [sys.executable, "-m", "tfpilot.cli.main", "lint", str(tree), "--format", "json"],
            capture_output=True,
            text=True,
        )
        if result.returncode not in (0, 1):
            raise SystemExit(f"lint failed on {tree} (exit {result.returncode}): {result.stderr.strip()}")
        for finding in json.loads(result.stdout or "[]"):
            location = finding["location"]
            path, line, _column = location.rsplit(":", 2)
            findings.append(
                {
                    "repository": tree.name.replace("+", "/", 1),
                    "path": str(Path(path).relative_to(tree)),
                    "line": line,
                    "rule": finding["code"],
                }
            )
    return findings


def score(root: Path) -> int:
    findings = lint_tree(root)
    firing = {(f["repository"], f["path"], f["line"], f["rule"]) for f in findings}
    per_rule = Counter(f["rule"] for f in findings)
    if not LABELS.exists():
        print(f"findings on the corpora: {len(findings)}  by rule: {dict(sorted(per_rule.items()))}")
        print(f"no labels yet: write {LABELS.name} with columns {','.join(FIELDS)}")
        return 0
    with LABELS.open(newline="") as handle:
        labels = list(csv.DictReader(handle))
    live = [row for row in labels if (row["repository"], row["path"], row["line"], row["rule"]) in firing]
    gone = [row for row in labels if row not in live]
    verdicts = Counter(row["label"] for row in live)
    print(f"findings on the corpora: {len(findings)}  by rule: {dict(sorted(per_rule.items()))}")
    print(f"labelled: {len(labels)}; still firing: {len(live)}; no longer firing: {len(gone)}")
    if live:
        strict = verdicts["tp"] / len(live)
        lenient = (verdicts["tp"] + verdicts["debatable"]) / len(live)
        print(f"strict precision {strict:.1%} ({verdicts['tp']}/{len(live)}), lenient {lenient:.1%}; {dict(verdicts)}")
        by_rule: dict[str, Counter[str]] = {}
        for row in live:
            by_rule.setdefault(row["rule"], Counter())[row["label"]] += 1
        for rule, counts in sorted(by_rule.items()):
            print(f"  {rule}: {dict(counts)}")
    gone_by_label = Counter(row["label"] for row in gone)
    if gone:
        print(f"labelled findings that no longer fire, by label: {dict(gone_by_label)}")
    unlabelled = firing - {(r["repository"], r["path"], r["line"], r["rule"]) for r in labels}
    print(f"unlabelled findings: {len(unlabelled)} (label them to keep the sample honest)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    export_parser = commands.add_parser("export", help="export a bare git dir's .py and notebooks")
    export_parser.add_argument("--git-dir", type=Path, required=True)
    export_parser.add_argument("--repository", required=True, help="owner/name")
    export_parser.add_argument("destination", type=Path)
    score_parser = commands.add_parser("score", help="lint exported trees and score the labels")
    score_parser.add_argument("root", type=Path)
    unlabelled_parser = commands.add_parser("findings", help="print today's findings as CSV rows to label")
    unlabelled_parser.add_argument("root", type=Path)
    args = parser.parse_args(argv)
    if args.command == "export":
        return export(args.git_dir, args.repository, args.destination)
    if args.command == "findings":
        writer = csv.writer(sys.stdout)
        for finding in lint_tree(args.root):
            writer.writerow([finding["repository"], finding["path"], finding["line"], finding["rule"]])
        return 0
    return score(args.root)


if __name__ == "__main__":
    raise SystemExit(main())
