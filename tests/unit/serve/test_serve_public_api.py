"""tfpilot.serve's public names, and that importing it stays cheap (no TensorFlow)."""

from __future__ import annotations

import subprocess
import sys

import tfpilot.serve

EXPECTED = {
    "ModelServer",
    "ServerOptions",
    "DEFAULT_MAX_REQUEST_BYTES",
    "ServedModel",
    "VersionPolicy",
    "BatchingParameters",
    "parse_model_config",
    "load_model_config_file",
    "parse_batching_parameters",
    "load_batching_parameters_file",
    "ModelRegistry",
    "ModelState",
    "VersionStatus",
    "Batcher",
    "MetricsRegistry",
    "RequestLog",
    "LoggedRequest",
    "read_requests",
    "Code",
    "RequestError",
}


def test_public_names_are_stable_and_resolve():
    assert set(tfpilot.serve.__all__) == EXPECTED
    assert all(hasattr(tfpilot.serve, name) for name in tfpilot.serve.__all__)


def test_importing_serve_and_its_cli_does_not_import_tensorflow():
    code = "import sys, tfpilot.serve, tfpilot.cli.serve; print('tensorflow' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
