"""tensorflow_model_server's whole flag surface: launch scripts written for TF Serving start."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import wait_until_serving
from tfpilot.serve import demo_models
from tfpilot.serve.tf_serving_flags import ACCEPTED_FLAGS, BOOLEAN_FLAGS, strip_accepted_flags

TFPILOT = [sys.executable, "-m", "tfpilot.cli.main"]
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


def _flag_args(*, spaced: bool) -> list[str]:
    args: list[str] = []
    for name in sorted(ACCEPTED_FLAGS):
        if name in BOOLEAN_FLAGS:
            args.append(f"--{name}=true" if not spaced else f"--{name}")
        elif spaced:
            args += [f"--{name}", "1"]
        else:
            args.append(f"--{name}=1")
    return args


@pytest.mark.parametrize("spaced", [False, True])
def test_every_accepted_flag_is_stripped_with_a_notice_and_the_rest_is_kept(spaced: bool) -> None:
    rest, notices = strip_accepted_flags(["--port=0", *_flag_args(spaced=spaced), "--model_name", "m"])
    assert rest == ["--port=0", "--model_name", "m"]
    assert len(notices) == len(ACCEPTED_FLAGS)
    assert all(n.startswith("notice: --") and "has no effect" in n for n in notices)


def test_unknown_flag_exits_2_naming_it_and_version_prints_two_lines(tmp_path: Path) -> None:
    unknown = subprocess.run(
        [*TFPILOT, "serve", "--grpc_sockt_path=/tmp/x"], capture_output=True, text=True, env=ENV, timeout=120
    )
    assert unknown.returncode == 2 and "--grpc_sockt_path" in unknown.stderr
    version = subprocess.run([*TFPILOT, "serve", "--version"], capture_output=True, text=True, env=ENV, timeout=120)
    assert version.returncode == 0, version.stderr
    lines = version.stdout.strip().splitlines()
    assert lines[0].startswith("TensorFlow ModelServer: tfpilot-") and lines[1].startswith("TensorFlow Library: 2.")


@pytest.mark.slow
def test_server_started_with_tf_serving_flags_answers_on_its_grpc_unix_socket(tmp_path: Path) -> None:
    import grpc
    import numpy as np
    import tensorflow as tf
    from tensorflow_serving.apis import (
        get_model_status_pb2,
        model_service_pb2_grpc,
        predict_pb2,
        prediction_service_pb2_grpc,
    )

    demo_models.write_half_plus_two(tmp_path / "half", 1)
    socket_path = tmp_path / "grpc.sock"
    process = subprocess.Popen(
        [
            *TFPILOT,
            "serve",
            "--port=0",
            "--rest_api_port=auto",
            "--model_name=half",
            f"--model_base_path={tmp_path / 'half'}",
            f"--grpc_socket_path={socket_path}",
            "--tensorflow_session_parallelism=1",
            "--file_system_poll_wait_seconds=0",
            *_flag_args(spaced=False),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert re.search(r"gRPC  127\.0\.0\.1:\d+", wait_until_serving(process))
        with grpc.insecure_channel(f"unix:{socket_path}") as channel:
            status_request = get_model_status_pb2.GetModelStatusRequest()
            status_request.model_spec.name = "half"
            status = model_service_pb2_grpc.ModelServiceStub(channel).GetModelStatus(status_request, timeout=30)
            assert [v.version for v in status.model_version_status] == [1]
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "half"
            request.inputs["x"].CopyFrom(tf.make_tensor_proto(np.array([1.0, 2.0], np.float32)))
            reply = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=30)
            assert tf.make_ndarray(reply.outputs["y"]).tolist() == [2.5, 3.0]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        stderr = process.stderr.read() if process.stderr else ""
        assert stderr.count("has no effect") == len(ACCEPTED_FLAGS)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
