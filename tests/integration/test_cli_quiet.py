"""The command line shows tfpilot's lines, not TensorFlow's native start-up noise (issue 35):
the noise filter's rules, and a real command that loads TensorFlow and fails, run as a user runs it."""

from __future__ import annotations

import os

from conftest import run_tfpilot
from tfpilot.cli.quiet import is_noise


def test_the_filter_drops_tensorflows_start_up_lines_and_nothing_else():
    noise = [
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
        "I0000 00:00:1796493384.902440   28262 port.cc:153] oneDNN custom operations are on. You may see ...",
        "I0000 00:00:1796493384.903166   28262 cudart_stub.cc:31] Could not find cuda drivers on your machine.",
        "E0000 00:00:1796491634.467579    6038 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error",
    ]
    kept = [
        "error: run `x` has no saved model",
        "W0000 00:00:1796491634.467579    6038 op_kernel.cc:1857] OP_REQUIRES failed at save_restore_v2_ops.cc",
        "UserWarning: `shuffle=True` was passed, but will be ignored",
        "",
    ]
    assert all(is_noise(line) for line in noise)
    assert not any(is_noise(line) for line in kept)


def test_a_command_that_loads_tensorflow_prints_only_its_own_error(tmp_path):
    run = tmp_path / "runs" / "broken"
    (run / "fit").mkdir(parents=True)
    (run / "config.yaml").write_text("name: broken\n")
    (run / "fit" / "spec.json").write_text('{"kind": "tfpilot.fit", "inputs": []}')
    environment = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "TFPILOT_TF_LOGS")}
    result = run_tfpilot(["export", str(run)], cwd=tmp_path, env=environment)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and all(not is_noise(line) for line in lines), result.stderr
    assert lines[-1].startswith("error:") and "model.keras" in lines[-1]
