"""--mode native on own TF1 fixtures: the output is TF2 code that runs and trains (real TF, subprocess)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tfpilot.migrate import migrate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "migrate"


def run(path: Path) -> str:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, str(path)], cwd=path.parent, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    root = tmp_path_factory.mktemp("native")
    source = root / "src"
    source.mkdir()
    for name in ("native_mlp.py", "native_unsupported.py"):
        (source / name).write_text((FIXTURES / name).read_text())
    report = migrate(source, root / "out", mode="native")
    return root / "out", report


def test_native_rewrite_is_tf2_and_trains(migrated):
    out, report = migrated
    text = (out / "native_mlp.py").read_text()
    for gone in ("compat.v1", "Session(", "placeholder(", "disable_v2_behavior", "feed_dict"):
        assert gone not in text
    for idiom in (
        "@tf.function",
        "tf.GradientTape()",
        "keras.optimizers.Adam",
        "keras.layers.Dense",
        "tf.train.Checkpoint",
    ):
        assert idiom in text
    assert text.count("keras.layers.Dense(") == 1  # created once, shared by training and evaluation
    output = run(out / "native_mlp.py")
    first, last = (float(value) for value in output.split("LOSS")[1].split()[:2])
    assert last < first * 0.8
    restored = float(output.split("RESTORED")[1].split()[0])
    assert restored == pytest.approx(last, rel=0.2)  # the restored variables are the trained ones
    status = {s.path: s for s in report.statuses}
    assert status["native_mlp.py"].rewrite == "native" and status["native_mlp.py"].will_run


def test_unsupported_construct_falls_back_to_compat_with_a_reason(migrated):
    out, report = migrated
    status = {s.path: s for s in report.statuses}["native_unsupported.py"]
    assert status.rewrite.startswith("compat: a graph tensor is defined inside a loop")
    text = (out / "native_unsupported.py").read_text()
    assert "disable_v2_behavior()" in text
    assert "TOTAL 24.0" in run(out / "native_unsupported.py")
    lines = [item.message for item in report.notes if item.path == "native_unsupported.py"]  # it runs: a note
    assert any("--mode native cannot rewrite this file" in line for line in lines)
    rendered = (out / "MIGRATION_REPORT.md").read_text()
    assert "| rewritten as |" in rendered and "| native |" in rendered


def numbers(text: str) -> list[float]:
    return [float(token) for token in re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", text)]


@pytest.mark.parametrize(
    "name",
    [
        "native_main.py",
        "native_summaries.py",
        "native_rebound_name.py",
        "native_rmsprop.py",
        "native_loop_loss.py",
        "native_as_default.py",
        "native_helper_variables.py",
        "native_model_function.py",
        "native_iterators.py",
        "native_clipped_gradients.py",
        "native_get_variable.py",
        "native_summed_penalty.py",
        "native_saver_steps.py",
    ],
)
def test_native_output_prints_what_the_tf1_program_printed(tmp_path, name):
    """The TF2 rewrite against the compat output (the TF1 program on tf.compat.v1): same numbers, 1e-4."""
    source = tmp_path / "src"
    source.mkdir()
    (source / name).write_text((FIXTURES / name).read_text())
    outputs = {}
    for mode in ("native", "compat"):
        report = migrate(source, tmp_path / mode, mode=mode)
        if mode == "native":
            assert report.statuses[0].rewrite == "native", report.statuses[0].rewrite
            text = (tmp_path / mode / name).read_text()
            for gone in ("compat.v1", "Session(", "placeholder(", "feed_dict"):
                assert gone not in text
        outputs[mode] = run(tmp_path / mode / name)
    native, compat = numbers(outputs["native"]), numbers(outputs["compat"])
    assert len(native) == len(compat) > 3, outputs
    assert native == pytest.approx(compat, rel=1e-4, abs=1e-4), outputs
    if name == "native_summaries.py":  # the summaries were written, as TF1's FileWriter wrote them
        assert list((tmp_path / "native" / "logs").glob("events.out.tfevents.*"))
