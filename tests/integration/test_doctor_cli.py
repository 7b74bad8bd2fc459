"""`tfpilot profile` and `tfpilot doctor RUN|CONFIG|SCRIPT.py -- ARGS` as real subprocesses.

Exit codes follow --fail-on (1 when a finding reaches the threshold, 0 otherwise, 2 on bad input),
findings are appended to findings.json, and profile/ holds the files the report reads.
"""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from conftest import run_tfpilot
from tfpilot.findings import Severity, read_findings

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parents[1] / "fixtures" / "doctor"


def write_config(directory: Path, digits_folder: Path, name: str) -> Path:
    config = directory / f"{name}.yaml"
    config.write_text(
        f"name: {name}\nruns_dir: {directory / 'runs'}\n"
        f"data: {{kind: image_folder, path: {digits_folder}}}\n"
        "model: {name: mlp, hidden_units: [32], dropout: 0.0}\n"
        "train: {epochs: 1, batch_size: 64, steps_per_epoch: 10, early_stopping: null, histogram_every_epochs: 0}\n"
    )
    return config


def expected_exit(findings, fail_on: str) -> int:
    if fail_on == "never":
        return 0
    return int(any(f.severity.rank >= Severity(fail_on).rank for f in findings))


@pytest.fixture(scope="module")
def profiled(tmp_path_factory, digits_folder):
    directory = tmp_path_factory.mktemp("doctor-cli")
    config = write_config(directory, digits_folder, "profiled")
    result = run_tfpilot(["profile", config, "--steps", "3:8"], cwd=directory)
    return directory, directory / "runs" / "profiled", result


def test_profile_writes_the_profile_directory(profiled):
    _, run, result = profiled
    assert result.returncode == 0, result  # --fail-on defaults to never for profile
    profile = run / "profile"
    assert list((profile / "plugins" / "profile").glob("*/*.xplane.pb"))
    trace = json.loads(gzip.decompress((profile / "trace.json.gz").read_bytes()))
    # The step markers were grouped by xprof: each carries its step name and a group id.
    markers = [e for e in trace["traceEvents"] if e.get("args", {}).get("step_num") and e["name"].startswith("train")]
    assert sorted(int(e["args"]["step_num"]) for e in markers) == [3, 4, 5, 6, 7]
    assert all("group_id" in e["args"] for e in markers)
    with (profile / "op_stats.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert rows and set(rows[0]) == {"operation", "type", "host_or_device", "occurrences", "total_self_time_ms",
                                     "avg_self_time_us", "self_time_percent", "eager"}
    summary = json.loads((profile / "summary.json").read_text())
    assert summary["capture"]["steps"] == [3, 4, 5, 6, 7]
    assert [row["step"] for row in summary["steps"]["per_step"]] == [f"train {n}" for n in range(3, 8)]  # xprof's own steps
    assert summary["files"] == {"trace": "trace.json.gz", "op_stats": "op_stats.csv", "summary": "summary.json",
                                "xplane": summary["files"]["xplane"]}
    assert "Step-time breakdown" in result.stdout
    assert (run / "findings.json").exists() and (run / "metrics.json").exists()


def test_doctor_run_dir_reanalyses_and_appends(profiled):
    from tfpilot.diagnose import analyze_run

    _, run, _ = profiled
    before = read_findings(run / "findings.json")
    expected = analyze_run(run)
    # analyze_run itself only reads; the command appends.
    assert read_findings(run / "findings.json") == before
    result = run_tfpilot(["doctor", run, "--fail-on", "never"], cwd=run.parent)
    assert result.returncode == 0, result
    after = read_findings(run / "findings.json")
    assert [f.code for f in after] == [f.code for f in before] + [f.code for f in expected]


def test_doctor_config_profiles_and_exit_code_follows_findings(tmp_path, digits_folder):
    config = write_config(tmp_path, digits_folder, "doctored")
    result = run_tfpilot(["doctor", config, "--steps", "2:5", "--fail-on", "warning"], cwd=tmp_path)
    run = tmp_path / "runs" / "doctored"
    profile_findings = [f for f in read_findings(run / "findings.json") if f.code.startswith("DOC-")]
    assert result.returncode == expected_exit(profile_findings, "warning"), result
    summary = json.loads((run / "profile" / "summary.json").read_text())
    assert summary["capture"]["steps"] == [2, 3, 4]
    assert len(profile_findings) == len({f.code for f in profile_findings})  # recorded once, not twice


def test_doctor_script_with_arguments_and_fail_on(tmp_path):
    output = tmp_path / "out"
    script = FIXTURES / "bad_retrace_float.py"
    # Retracing is a warning: it fails --fail-on warning ...
    result = run_tfpilot(["doctor", script, "-o", output, "--profile-start", "2", "--profile-steps", "2", "--fail-on", "warning",
                          "--", "--steps", "5"], cwd=tmp_path)
    assert result.returncode == 1, result
    findings = read_findings(output / "findings.json")
    retracing = next(f for f in findings if f.code == "DOC-RETRACING")
    assert retracing.evidence["tracing_count"] == 5 and retracing.evidence["calls"] == 5  # the script saw --steps 5
    assert (output / "watch.json").exists()
    # ... and re-analysing the output directory passes --fail-on error while appending the same diagnosis.
    again = run_tfpilot(["doctor", output], cwd=tmp_path)
    assert again.returncode == expected_exit(findings, "error"), again
    assert [f.code for f in read_findings(output / "findings.json")] == [f.code for f in findings] * 2


@pytest.mark.parametrize("args", [
    ["doctor", "notes.txt"],
    ["doctor", "missing.yaml"],
    ["doctor", "run", "--fail-on", "sometimes"],
    ["profile", "config.yaml", "--steps", "8:3"],
])
def test_bad_input_exits_2_with_one_line(tmp_path, args):
    (tmp_path / "notes.txt").write_text("not a run\n")
    result = run_tfpilot(args, cwd=tmp_path)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.startswith("error: ")]) == 1, result
