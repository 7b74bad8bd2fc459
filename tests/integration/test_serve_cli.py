"""`tfpilot serve` as users run it: TF Serving's flags, a config file, signals, one-line errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from conftest import wait_until_serving
from tfpilot.serve import demo_models

TFPILOT = [sys.executable, "-c", "from tfpilot.cli.main import main; main()"]
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*TFPILOT, "serve", *args], capture_output=True, text=True, env=ENV, timeout=120)


def test_usage_errors_are_one_line_with_exit_code_2(tmp_path):
    result = run_cli("--rest_api_port", "0")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: no model to serve; pass --model_base_path DIR (with --model_name NAME) or --model_config_file FILE"
    ]
    version_dir = tmp_path / "model" / "1"
    version_dir.mkdir(parents=True)
    (version_dir / "saved_model.pb").write_bytes(b"")
    result = run_cli("--model_base_path", str(version_dir))
    assert result.returncode == 2 and "is itself a SavedModel" in result.stderr
    result = run_cli("--model_name", "a/b", "--model_base_path", str(tmp_path / "model"))
    assert result.returncode == 2 and "no path separators" in result.stderr
    result = run_cli("--rest_api_port", "eighty", "--model_base_path", str(tmp_path / "model"))
    assert result.returncode == 2 and "0 to disable REST, or `auto`" in result.stderr


def test_rest_api_port_zero_disables_rest_as_in_tf_serving(tmp_path):
    demo_models.write_half_plus_two(tmp_path / "half", 1)
    process = subprocess.Popen(
        [*TFPILOT, "serve", "--port=0", "--rest_api_port=0", f"--model_base_path={tmp_path / 'half'}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        output = wait_until_serving(process)
        assert re.search(r"gRPC  127\.0\.0\.1:\d+", output)
        assert "REST" not in output
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    (tmp_path / "bad.config").write_text("model_config_list { config { name: 'x' } }")
    result = run_cli("--model_config_file", str(tmp_path / "bad.config"))
    assert result.returncode == 2 and "needs a `base_path`" in result.stderr


@pytest.mark.slow
def test_serve_with_tf_serving_flags_answers_rest_and_grpc_and_stops_on_sigterm(tmp_path):
    import grpc
    import numpy as np
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    from tfpilot.serve import read_requests

    demo_models.write_half_plus_two(tmp_path / "half", 1)
    config = tmp_path / "models.config"
    config.write_text(
        f'model_config_list {{ config {{ name: "half" base_path: "{tmp_path / "half"}" model_platform: "tensorflow" '
        'version_labels { key: "stable" value: 1 } } }'
    )
    batching = tmp_path / "batching.config"
    batching.write_text(
        "max_batch_size { value: 16 } batch_timeout_micros { value: 500 } num_batch_threads { value: 2 }"
    )
    log = tmp_path / "requests.sqlite"
    process = subprocess.Popen(
        [
            *TFPILOT,
            "serve",
            "--port=0",
            "--rest_api_port=auto",
            f"--model_config_file={config}",
            "--enable_batching=true",
            f"--batching_parameters_file={batching}",
            "--file_system_poll_wait_seconds=0",
            "--rest_api_timeout_in_ms=10000",
            f"--request_log={log}",
            "--request_log_sample_rate=1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        output = wait_until_serving(process)
        assert "model half: v1 AVAILABLE" in output and "batching: max_batch_size=16" in output
        rest = re.search(r"REST  (http://127\.0\.0\.1:\d+)", output).group(1)
        target = re.search(r"gRPC  (127\.0\.0\.1:\d+)", output).group(1)
        request = urllib.request.Request(
            f"{rest}/v1/models/half/labels/stable:predict", data=b'{"instances": [1.0, 2.0, 5.0]}', method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read()) == {"predictions": [2.5, 3.0, 4.5]}
        with grpc.insecure_channel(target) as channel:
            grpc_request = predict_pb2.PredictRequest()
            grpc_request.model_spec.name = "half"
            grpc_request.inputs["x"].CopyFrom(tf.make_tensor_proto(np.array([4.0], np.float32)))
            reply = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(grpc_request, timeout=30)
            assert tf.make_ndarray(reply.outputs["y"]).tolist() == [4.0]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    logged = read_requests(Path(log))
    assert [entry.outputs["y"] for entry in logged] == [[2.5, 3.0, 4.5], [4.0]]
