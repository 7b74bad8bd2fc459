"""Precision of `tfpilot lint` on real code that tfpilot's authors did not write.

The labels in ``benchmarks/lint_labels.csv`` (repository, commit, path, line, rule, label, why)
were made by reading the code at each finding. Labels: ``tp`` (the finding is right and worth
acting on), ``debatable`` (right in letter, harmless in that code), ``fp`` (wrong).

Two steps, both offline once the repositories are on disk:

    # 1. export a checkout (a work tree, or a bare git dir via --git-dir) to plain .py files;
    #    notebook code cells become one .py per notebook, line for line, as IPython would run
    #    them (shell/magic lines become `pass  # ...`, non-Python cell magics are commented out)
    python benchmarks/lint_precision.py export --git-dir /work/.mirror/tensorflow+docs/repo \\
        --repository tensorflow/docs /tmp/corpora/tensorflow+docs

    # 2. lint the exported trees and re-score the labels against today's findings
    python benchmarks/lint_precision.py score /tmp/corpora

``score`` expects one directory per repository, named owner+name, under the given root.
It prints: findings per rule and severity on the corpora, how many labelled findings still fire,
strict precision (tp / labelled-and-firing) and lenient precision ((tp + debatable) / same) over
all severities and again over the findings at ``--min-severity`` or above (default warning: an
info finding is a note, not a claim of a defect), and the labelled findings that no longer fire
(fixed false positives count as gone, not as errors).
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

from tfpilot.lint.notebooks import notebook_to_python

LABELS = Path(__file__).with_name("lint_labels.csv")
FIELDS = ["repository", "commit", "path", "line", "rule", "label", "why"]


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
            try:
                # each broken cell commented out, as `tfpilot lint` reads a notebook that does not parse whole
                data = notebook_to_python(
                    data.decode("utf-8", errors="replace"), isolate_broken_cells=True
                ).source.encode()
            except ValueError:
                data = b""
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
                    "severity": finding["severity"],
                    # what the rule itself claimed, before an earned-severity note lowered it
                    "rule_severity": finding.get("evidence", {}).get("rule_severity", finding["severity"]),
                    # a call in a multi-line chain is reported at its method; labels made when
                    # findings pointed at the statement's first line still match it there
                    "start_line": str(finding.get("evidence", {}).get("start", f"{line}:").split(":")[0]),
                }
            )
    return findings


SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


def firing_severities(findings: list[dict[str, str]], field: str = "severity") -> dict[tuple[str, str, str, str], str]:
    """(repository, path, line, rule) -> severity, for each finding's line and, for a call in a
    multi-line chain, its statement's first line (where older labels point)."""
    firing: dict[tuple[str, str, str, str], str] = {}
    for f in findings:
        for line in {f["line"], f["start_line"]}:
            key = (f["repository"], f["path"], line, f["rule"])
            # two hits of one rule on one line: the label stands for the stronger claim
            if SEVERITY_RANK[f[field]] >= SEVERITY_RANK[firing.get(key, "info")]:
                firing[key] = f[field]
    return firing


def precision_report(live: list[dict[str, str]], per_rule: Counter[str], heading: str) -> None:
    """Strict / lenient precision over ``live`` (labelled findings that fire), overall and per rule."""
    verdicts = Counter(row["label"] for row in live)
    print(heading)
    if not live:
        print("  nothing labelled fires here")
        return
    strict = verdicts["tp"] / len(live)
    lenient = (verdicts["tp"] + verdicts["debatable"]) / len(live)
    print(f"  strict precision {strict:.1%} ({verdicts['tp']}/{len(live)}), lenient {lenient:.1%}; {dict(verdicts)}")
    by_rule: dict[str, Counter[str]] = {}
    for row in live:
        by_rule.setdefault(row["rule"], Counter())[row["label"]] += 1
    # the sample is stratified per rule, so the plain ratio over-weights rare rules; weighting
    # each rule's precision by how often it fires estimates precision on a finding picked at random
    fired = sum(per_rule[rule] for rule in by_rule)
    if fired:
        weighted_strict = sum(per_rule[r] * c["tp"] / sum(c.values()) for r, c in by_rule.items()) / fired
        weighted_lenient = (
            sum(per_rule[r] * (c["tp"] + c["debatable"]) / sum(c.values()) for r, c in by_rule.items()) / fired
        )
        print(
            f"  weighted by findings per rule ({fired} findings of labelled rules): "
            f"strict {weighted_strict:.1%}, lenient {weighted_lenient:.1%}"
        )
    for rule, counts in sorted(by_rule.items()):
        total = sum(counts.values())
        print(
            f"    {rule}: strict {counts['tp'] / total:.0%} lenient {(counts['tp'] + counts['debatable']) / total:.0%}"
            f"  ({counts['tp']} tp, {counts['debatable']} debatable, {counts['fp']} fp of {total})"
        )


def score(root: Path, min_severity: str = "warning", labels_path: Path = LABELS, field: str = "severity") -> int:
    findings = lint_tree(root)
    for finding in findings:
        finding["severity"] = finding[field]  # --rule-severity: judge each rule by its own claim
    firing = firing_severities(findings)
    per_rule = Counter(f["rule"] for f in findings)
    per_severity = Counter(f["severity"] for f in findings)
    print(f"findings on the corpora: {len(findings)}  by severity: {dict(sorted(per_severity.items()))}")
    print(f"  by rule: {dict(sorted(per_rule.items()))}")
    if not labels_path.exists():
        print(f"no labels yet: write {labels_path.name} with columns {','.join(FIELDS)}")
        return 0
    with labels_path.open(newline="") as handle:
        labels = list(csv.DictReader(handle))
    # labels carry the commit they were read at; a corpus exported at another commit has other lines
    for repository in sorted({row["repository"] for row in labels}):
        marker = root / (repository.replace("/", "+", 1) + ".commit")
        wanted = {row["commit"] for row in labels if row["repository"] == repository}
        have = marker.read_text().strip() if marker.exists() else "not exported"
        if have not in wanted:
            print(f"warning: {repository} is at {have[:12]}, labels were made at {', '.join(sorted(wanted))}")

    def key(row: dict[str, str]) -> tuple[str, str, str, str]:
        return (row["repository"], row["path"], row["line"], row["rule"])

    live = [row for row in labels if key(row) in firing]
    gone = [row for row in labels if key(row) not in firing]
    print(f"labelled: {len(labels)}; still firing: {len(live)}; no longer firing: {len(gone)}")
    precision_report(live, per_rule, "all severities:")
    # an info finding is a note, not a claim of a defect: precision of the claims on its own
    rank = SEVERITY_RANK[min_severity]
    claims = [row for row in live if SEVERITY_RANK[firing[key(row)]] >= rank]
    claim_rules = Counter(f["rule"] for f in findings if SEVERITY_RANK[f["severity"]] >= rank)
    if rank:
        notes = Counter(row["label"] for row in live if SEVERITY_RANK[firing[key(row)]] < rank)
        print(f"labelled findings below {min_severity} (notes): {sum(notes.values())} {dict(notes)}")
        precision_report(claims, claim_rules, f"{min_severity} and above ({sum(claim_rules.values())} findings):")
    if gone:
        print(f"labelled findings that no longer fire, by label: {dict(Counter(row['label'] for row in gone))}")
    unlabelled = set(firing) - {key(r) for r in labels}
    print(f"unlabelled findings: {len(unlabelled)} (label them to keep the sample honest)")
    return 0


def recall(root: Path, pitfalls_path: Path) -> int:
    """Pitfalls found by reading the code (written before any lint output was seen): how many
    the expected rule reports on their line, at any severity and at warning or above."""
    firing = firing_severities(lint_tree(root))
    with pitfalls_path.open(newline="") as handle:
        every = list(csv.DictReader(handle))
    rows = [row for row in every if row["expected_rule"].startswith("TFP")]
    found = [r for r in rows if (r["repository"], r["path"], r["line"], r["expected_rule"]) in firing]
    claims = [r for r in found if firing[(r["repository"], r["path"], r["line"], r["expected_rule"])] != "info"]
    print(f"pitfalls with a rule: {len(rows)}; found at any severity {len(found)}, at warning or above {len(claims)}")
    # issue 30 counts recall over everything read: a pitfall no rule covers is a miss too
    print(f"all read pitfalls: {len(every)}; found by their rule {len(found)} ({len(found) / max(len(every), 1):.0%})")
    for row in rows:
        severity = firing.get((row["repository"], row["path"], row["line"], row["expected_rule"]))
        if severity in (None, "info"):
            state = "missed" if severity is None else "info only"
            print(f"  {state}: {row['expected_rule']} {row['repository']} {row['path']}:{row['line']} {row['what']}")
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
    score_parser.add_argument(
        "--min-severity",
        choices=sorted(SEVERITY_RANK, key=SEVERITY_RANK.__getitem__),
        default="warning",
        help="also score only the findings at this severity or above (default warning: the defect "
        "claims, without info notes); `info` prints the all-severity numbers alone",
    )
    score_parser.add_argument(
        "--labels", type=Path, default=LABELS, help="labels CSV (default: benchmarks/lint_labels.csv)"
    )
    score_parser.add_argument(
        "--rule-severity",
        action="store_true",
        help="use the severity each rule claimed before earned-severity notes (src/tfpilot/lint/earned.py "
        "is measured this way: a rule lowered to notes must still be judged on its own claims)",
    )
    recall_parser = commands.add_parser("recall", help="lint exported trees and check the read pitfalls")
    recall_parser.add_argument("root", type=Path)
    recall_parser.add_argument(
        "--pitfalls", type=Path, required=True, help="pitfalls CSV (benchmarks/lint_pitfalls_*.csv)"
    )
    unlabelled_parser = commands.add_parser("findings", help="print today's findings as CSV rows to label")
    unlabelled_parser.add_argument("root", type=Path)
    args = parser.parse_args(argv)
    if args.command == "export":
        return export(args.git_dir, args.repository, args.destination)
    if args.command == "recall":
        return recall(args.root, args.pitfalls)
    if args.command == "findings":
        writer = csv.writer(sys.stdout)
        for finding in lint_tree(args.root):
            writer.writerow([finding["repository"], finding["path"], finding["line"], finding["rule"]])
        return 0
    return score(args.root, args.min_severity, args.labels, "rule_severity" if args.rule_severity else "severity")


if __name__ == "__main__":
    raise SystemExit(main())
