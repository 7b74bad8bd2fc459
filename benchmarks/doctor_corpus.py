"""Score `tfpilot doctor` on the corpus in tests/fixtures/doctor/corpus against manifest.json.

PYTHONPATH=src .venv/bin/python benchmarks/doctor_corpus.py [--only NAME ...] [--json OUT]

Per script: one plain run (the anchor) and one `tfpilot doctor SCRIPT --fail-on never` run, both timed in
this process. Scores: the expected finding code on problem scripts, error/warning findings on fixed
scripts, and for NaN scripts whether a DOC-NONFINITE finding names the expected op and the script's
`# NAN-SOURCE` line. Overhead is doctor wall / plain wall per script (median reported).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).parents[1] / "tests" / "fixtures" / "doctor" / "corpus"


def _nan_line(script: Path) -> int | None:
    for number, line in enumerate(script.read_text().splitlines(), start=1):
        if "# NAN-SOURCE" in line:
            return number
    return None


def _names_op_and_line(findings: list[dict], op: str, script: Path, line: int | None) -> bool:
    """True when one DOC-NONFINITE finding mentions the op and `NAME.py:LINE` anywhere in its text."""
    needle = f"{script.name}:{line}"
    for finding in findings:
        if finding.get("code") != "DOC-NONFINITE":
            continue
        text = json.dumps(finding)
        if op in text and needle in text:
            return True
    return False


def _timed(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[float, int]:
    start = time.perf_counter()
    try:
        completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        code = completed.returncode
    except subprocess.TimeoutExpired:
        code = -9
    return time.perf_counter() - start, code


def score_script(name: str, expected: dict, timeout: float) -> dict:
    script = CORPUS / name
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    # The runs start in the corpus directory: a relative PYTHONPATH (`PYTHONPATH=src`) would not find this
    # checkout's src there, and the doctor of whatever tfpilot is installed would be scored instead.
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    plain_s, plain_rc = _timed([sys.executable, str(script)], CORPUS, env, timeout)
    with tempfile.TemporaryDirectory() as output:
        doctor_cmd = [sys.executable, "-m", "tfpilot.cli.main", "doctor", str(script), "-o", output]
        doctor_s, doctor_rc = _timed([*doctor_cmd, "--fail-on", "never"], CORPUS, env, timeout)
        findings_path = Path(output) / "findings.json"
        findings = json.loads(findings_path.read_text()) if findings_path.exists() else []
    codes = sorted({f["code"] for f in findings})
    loud = sorted({f["code"] for f in findings if f.get("severity") in ("error", "warning")})
    row: dict = {
        "script": name,
        "kind": expected["kind"],
        "codes": codes,
        "loud": loud,
        "plain_s": round(plain_s, 2),
        "plain_rc": plain_rc,
        "doctor_s": round(doctor_s, 2),
        "doctor_rc": doctor_rc,
        "ratio": round(doctor_s / plain_s, 2) if plain_s > 0 else None,
    }
    if expected["kind"] == "problem":
        row["right_cause"] = expected["expect"] in codes
    else:
        row["clean"] = not loud
    if "nan_op" in expected:
        row["nan_op_line"] = _names_op_and_line(findings, expected["nan_op"], script, _nan_line(script))
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", help="Score only these scripts (file names).")
    parser.add_argument("--json", type=Path, help="Also write the per-script rows here.")
    parser.add_argument("--timeout", type=float, default=180.0, help="Per-run timeout in seconds.")
    options = parser.parse_args()
    manifest = json.loads((CORPUS / "manifest.json").read_text())["scripts"]
    names = options.only or sorted(manifest)
    rows = []
    for name in names:
        row = score_script(name, manifest[name], options.timeout)
        rows.append(row)
        verdict = row.get("right_cause", row.get("clean"))
        print(
            f"{name:34s} {'ok ' if verdict else 'BAD'} codes={','.join(row['codes']) or '-'} "
            f"loud={','.join(row['loud']) or '-'} plain={row['plain_s']}s doctor={row['doctor_s']}s "
            f"ratio={row['ratio']}" + (f" nan_op_line={row['nan_op_line']}" if "nan_op_line" in row else ""),
            flush=True,
        )
    problems = [r for r in rows if r["kind"] == "problem"]
    fixed = [r for r in rows if r["kind"] == "fixed"]
    nans = [r for r in rows if "nan_op_line" in r]
    right = sum(r["right_cause"] for r in problems)
    loud_fixed = sum(not r["clean"] for r in fixed)
    named = sum(r["nan_op_line"] for r in nans)
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None and r["plain_rc"] == 0]
    print(f"right cause on problem scripts: {right}/{len(problems)} ({100 * right / max(len(problems), 1):.0f}%)")
    print(f"fixed scripts with an error/warning finding: {loud_fixed}/{len(fixed)}")
    print(f"NaN scripts naming op and file:line: {named}/{len(nans)}")
    if ratios:
        print(
            f"doctor/plain wall ratio: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}x, max {max(ratios):.2f}x)"
        )
    if options.json:
        options.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
