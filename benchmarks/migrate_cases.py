"""Do TF1 scripts nobody here wrote run after `tfpilot migrate`? The driver of the held-out rounds.

A case folder (outside this repository: the scripts are other people's code) holds one folder per
case, prepared by a helper who never read tfpilot:

    CASE/src/                  the TF1 tree (steps shrunk, data pointed at synthetic files)
    CASE/reference/            the same tree hand-edited to run on TF 2.21; reference.out is its stdout
    CASE/case.json             {"entry": "train.py", "args": [], "timeout": 300,
                                "regex": "loss[:= ]+([-0-9.eE+]+)", "rtol": 1e-3, "atol": 1e-5}

For each case and mode (compat, native): `tfpilot migrate CASE/src OUT --mode MODE`, then the
entry script runs from the migrated tree with the case's timeout. It *matches* when it exits 0 and
the numbers the regex captures in its stdout equal the reference's (same count, within rtol/atol).
Native output is *really native* when it matches and no migrated file still holds a TF1 graph:
no `compat.v1` Session or placeholder and no `disable_v2_behavior` / `disable_eager_execution`.

    python benchmarks/migrate_cases.py CASES OUT [CASE ...]
    PYTHONPATH=/path/to/worktree/src python benchmarks/migrate_cases.py ...   # another commit's tfpilot
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

GRAPH_MARKERS = re.compile(
    r"compat\.v1\.(Session|InteractiveSession|placeholder)\b|disable_v2_behavior|disable_eager_execution"
)


def _numbers(text: str, pattern: str) -> list[float]:
    values = []
    for match in re.finditer(pattern, text):
        try:
            values.append(float(match.group(1).rstrip(".,")))
        except ValueError:
            continue
    return values


def _matches(got: list[float], want: list[float], rtol: float, atol: float) -> str:
    if not want:
        return "reference printed no numbers"
    if len(got) != len(want):
        return f"{len(got)} numbers vs the reference's {len(want)}"
    if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        worst = max(abs(a - b) for a, b in zip(got, want, strict=True))
        return f"numbers differ (max {worst:.3g})"
    return "matches"


def run_mode(case_dir: Path, mode: str, out: Path, spec: dict[str, Any]) -> dict[str, Any]:
    destination = out / case_dir.name / mode
    if destination.exists():
        shutil.rmtree(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONHASHSEED": "0"}
    migrated = subprocess.run(
        [sys.executable, "-m", "tfpilot.cli.main", "migrate", str(case_dir / "src"), str(destination), "--mode", mode],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    result: dict[str, Any] = {"migrate_exit": migrated.returncode, "expected_to_run": migrated.returncode == 0}
    if migrated.returncode == 2 or not destination.exists():
        result["outcome"] = f"migrate failed: {migrated.stderr.strip()[-300:]}"
        return result
    runner_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # the user's script sees no tfpilot src
    runner_env.update({k: str(v) for k, v in spec.get("env", {}).items()})
    try:
        ran = subprocess.run(
            [sys.executable, spec["entry"], *spec.get("args", [])],
            cwd=destination, capture_output=True, text=True, timeout=spec.get("timeout", 300), env=runner_env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        result["outcome"] = "timeout"
        return result
    (out / case_dir.name / f"{mode}.out").write_text(ran.stdout + "\n--- stderr\n" + ran.stderr)
    if ran.returncode != 0:
        tail = [line for line in ran.stderr.strip().splitlines() if line.strip()][-1:] or ["?"]
        result["outcome"] = f"exit {ran.returncode}: {tail[0][:300]}"
        return result
    reference = (case_dir / "reference" / "reference.out").read_text()
    result["outcome"] = _matches(
        _numbers(ran.stdout, spec["regex"]),
        _numbers(reference, spec["regex"]),
        spec.get("rtol", 1e-3),
        spec.get("atol", 1e-5),
    )
    graph_files = sorted(
        str(path.relative_to(destination))
        for path in destination.rglob("*.py")
        if GRAPH_MARKERS.search(path.read_text(errors="replace"))
    )
    result["graph_files"] = graph_files
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print(__doc__)
        return 2
    cases_root, out = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    names = argv[2:] or sorted(p.name for p in cases_root.iterdir() if (p / "case.json").exists())
    totals = {"compat": 0, "native": 0, "really_native": 0}
    for name in names:
        case_dir = cases_root / name
        spec = json.loads((case_dir / "case.json").read_text())
        results = {mode: run_mode(case_dir, mode, out, spec) for mode in ("compat", "native")}
        really = results["native"]["outcome"] == "matches" and not results["native"].get("graph_files")
        totals["compat"] += results["compat"]["outcome"] == "matches"
        totals["native"] += results["native"]["outcome"] == "matches"
        totals["really_native"] += really
        (out / name / "result.json").write_text(json.dumps(results, indent=1))
        print(
            f"{name}: compat {results['compat']['outcome']} (report: {'runs' if results['compat']['expected_to_run'] else 'will not run'});"
            f" native {results['native']['outcome']}; really native {'yes' if really else 'no'}"
            f" (graph left in {results['native'].get('graph_files', '?')})",
            flush=True,
        )
    print(
        f"of {len(names)}: compat matches {totals['compat']}, native matches {totals['native']}, really native {totals['really_native']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
