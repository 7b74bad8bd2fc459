"""docker/tf_serving_entrypoint.sh behaves like the tensorflow/serving image's entrypoint.

Run as the container runs it (environment variables, arguments appended), with the tfpilot of
this checkout; only the ports are overridden by appended flags, as `docker run IMAGE --port=...`
would, so the test does not need 8500/8501 free.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from conftest import wait_until_serving
from tfpilot.serve import demo_models

SCRIPT = Path(__file__).resolve().parents[2] / "docker" / "tf_serving_entrypoint.sh"


def start(env: dict[str, str], *args: str) -> subprocess.Popen:
    full_env = {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONUNBUFFERED": "1",
        "TFPILOT": f"{sys.executable} -m tfpilot.cli.main",
        **env,
    }
    return subprocess.Popen(
        ["bash", str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env
    )


def test_entrypoint_serves_model_name_under_model_base_path_on_all_interfaces(tmp_path):
    demo_models.write_half_plus_two(tmp_path / "models" / "half", 1)
    process = start(
        {"MODEL_NAME": "half", "MODEL_BASE_PATH": str(tmp_path / "models")}, "--port=0", "--rest_api_port=auto"
    )
    try:
        output = wait_until_serving(process)
        port = re.search(r"REST  http://0\.0\.0\.0:(\d+)/v1/models/half", output)
        assert port, output  # bound on every interface, as the image does
        request = urllib.request.Request(
            f"http://127.0.0.1:{port.group(1)}/v1/models/half:predict",
            data=b'{"instances": [1.0, 2.0, 5.0]}',
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read()) == {"predictions": [2.5, 3.0, 4.5]}
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0


def test_entrypoint_defaults_and_bad_model_name(tmp_path):
    process = start({"MODEL_NAME": "../etc"}, "--port=0")
    assert process.wait(timeout=60) == 2
    assert "MODEL_NAME must be a single name" in process.stderr.read()
    # Defaults are the image's: model `model` under /models (absent here, so a one-line error naming it).
    process = start({"MODEL_BASE_PATH": str(tmp_path)}, "--port=0", "--rest_api_port=auto")
    assert process.wait(timeout=60) == 2
    assert str(tmp_path / "model") in process.stderr.read()
