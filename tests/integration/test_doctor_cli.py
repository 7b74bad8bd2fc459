"""`tfpilot profile` and `tfpilot doctor RUN|SCRIPT.py -- ARGS` as real subprocesses.

Exit codes follow --fail-on (1 when a finding reaches the threshold, 0 otherwise, 2 on bad input),
findings are appended to findings.json, and profile/ holds the files the report reads. Every
subprocess that trains or converts a profile pays a TensorFlow start (~8 s of CPU), so one
profiled training run is shared by the module; `doctor CONFIG` runs the same `_profile_config`
as `profile` and is checked here only for its input validation.
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
    """One profiled training run shared by the tests below (each run costs a TensorFlow start and a training)."""
    directory = tmp_path_factory.mktemp("doctor-cli")
    config = write_config(directory, digits_folder, "profiled")
    result = run_tfpilot(["profile", config, "--steps", "3:8", "--fail-on", "warning"], cwd=directory)
    return directory, directory / "runs" / "profiled", result


def test_profile_writes_the_profile_directory(profiled):
    _, run, result = profiled
    profile = run / "profile"
    assert list((profile / "plugins" / "profile").glob("*/*.xplane.pb"))
    trace = json.loads(gzip.decompress((profile / "trace.json.gz").read_bytes()))
    # The step markers were grouped by xprof: each carries its step name and a group id.
    markers = [e for e in trace["traceEvents"] if e.get("args", {}).get("step_num") and e["name"].startswith("train")]
    assert sorted(int(e["args"]["step_num"]) for e in markers) == [3, 4, 5, 6, 7]
    assert all("group_id" in e["args"] for e in markers)
    with (profile / "op_stats.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert rows and set(rows[0]) == {
        "operation",
        "type",
        "host_or_device",
        "occurrences",
        "total_self_time_ms",
        "avg_self_time_us",
        "self_time_percent",
        "eager",
        "raw_type",
    }
    summary = json.loads((profile / "summary.json").read_text())
    assert summary["schema_version"] == 1 and summary["hardware_type"] == "CPU_ONLY"
    assert summary["capture"]["steps"] == [3, 4, 5, 6, 7]
    assert summary["files"] == {
        "trace": "trace.json.gz",
        "op_stats": "op_stats.csv",
        "summary": "summary.json",
        "xplane": summary["files"]["xplane"],
    }
    assert "Step-time breakdown" in result.stdout
    assert (run / "findings.json").exists() and (run / "metrics.json").exists()


def test_profile_hook_in_the_trainer_gets_xprof_steps(profiled):
    """The compiled step loops over get_next_as_optional in a tf.while_loop; xprof groups such loops by
    iteration and ignores the step markers unless the summary normalises them (xplane.py), so this fails
    if the breakdown silently falls back to wall-clock capture times."""
    _, run, _ = profiled
    summary = json.loads((run / "profile" / "summary.json").read_text())
    per_step = summary["steps"]["per_step"]
    assert [row["step"] for row in per_step] == [f"train {n}" for n in range(3, 8)]  # xprof's own rows, not "capture"
    assert all("source" not in row for row in per_step)
    for row in per_step:
        assert row["input_ms"] + row["compute_ms"] + row["other_ms"] == pytest.approx(row["step_ms"], rel=0.02)
        assert row["compute_ms"] > 0
    # The marker encloses the whole compiled call, so xprof's step is the Python-measured call time.
    assert summary["steps"]["step_ms"] == pytest.approx(sum(summary["capture"]["step_times_ms"]) / 5, rel=0.1)
    # Canonical types whatever oneDNN called them (`_MklMatMul`, `_MklNativeFusedMatMul` ...).
    assert any(op["type"] == "MatMul" and "MatMul" in op["raw_type"] for op in summary["top_ops"])


def test_profile_exit_code_follows_findings_recorded_once(profiled):
    _, run, result = profiled
    profile_findings = [f for f in read_findings(run / "findings.json") if f.code.startswith("DOC-")]
    assert result.returncode == expected_exit(profile_findings, "warning"), result
    assert len(profile_findings) == len(
        {f.code for f in profile_findings}
    )  # train_run recorded them; the command did not again


def test_doctor_run_dir_reanalyses_and_appends(profiled):
    _, run, _ = profiled
    before = read_findings(run / "findings.json")
    recorded = [f.code for f in before if f.code.startswith("DOC-")]
    result = run_tfpilot(["doctor", run, "--fail-on", "never"], cwd=run.parent)
    assert result.returncode == 0, result
    # The re-analysis converts the same .xplane.pb again, so it reaches the diagnosis the profile hook recorded.
    assert [f.code for f in read_findings(run / "findings.json")] == [f.code for f in before] + recorded


def test_doctor_script_with_arguments_and_fail_on(tmp_path):
    output = tmp_path / "out"
    script = FIXTURES / "bad_retrace_float.py"
    # Retracing is a warning: it fails --fail-on warning. --profile-start past the script's 5 calls
    # means no profile (the profile path is covered by test_doctor_scripts), so only the script's
    # own process imports TensorFlow.
    result = run_tfpilot(
        [
            "doctor",
            script,
            "-o",
            output,
            "--profile-start",
            "50",
            "--profile-steps",
            "2",
            "--fail-on",
            "warning",
            "--",
            "--steps",
            "5",
        ],
        cwd=tmp_path,
    )
    assert result.returncode == 1, result
    findings = read_findings(output / "findings.json")
    retracing = next(f for f in findings if f.code == "DOC-RETRACING")
    assert retracing.evidence["tracing_count"] == 5 and retracing.evidence["calls"] == 5  # the script saw --steps 5
    assert json.loads((output / "watch.json").read_text())["profile_dir"] is None  # --profile-start reached the watcher
    assert not (output / "profile").exists()
    # ... and re-analysing the output directory passes --fail-on error while appending the same diagnosis.
    again = run_tfpilot(["doctor", output], cwd=tmp_path)
    assert again.returncode == expected_exit(findings, "error"), again
    # (the note on how the profile window went is about the run itself, not its re-analysis)
    diagnosis = [f.code for f in findings if f.code != "DOC-PROFILE-WINDOW"]
    assert [f.code for f in read_findings(output / "findings.json")] == [f.code for f in findings] + diagnosis


@pytest.mark.parametrize(
    "args",
    [
        ["doctor", "notes.txt"],
        ["doctor", "missing.yaml"],
        ["doctor", "run", "--fail-on", "sometimes"],
        ["profile", "config.yaml", "--steps", "8:3"],
        ["doctor", "config.yaml", "--steps", "8:3"],
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, args):
    (tmp_path / "notes.txt").write_text("not a run\n")
    (tmp_path / "config.yaml").write_text("name: never-trained\n")
    result = run_tfpilot(args, cwd=tmp_path)
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.startswith("error: ")]) == 1, result
