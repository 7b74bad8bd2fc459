"""The TF.js tools' installation without the network: pins, time bound, one-line errors, progress.

The installation itself (PyPI and npm, from an empty tool directory) is
tests/integration/test_export_tfjs.py (`make test-tfjs`).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time

import pytest

from tfpilot.errors import ExportError
from tfpilot.export import tfjs


def _requirements() -> dict[str, str]:
    pins = {}
    for line in (tfjs.ASSETS / "requirements.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+) --hash=sha256:[0-9a-f]{64}", line.strip())
        assert match, f"every requirement is pinned with one sha256 hash: {line!r}"
        pins[match.group(1)] = match.group(2)
    return pins


def test_requirements_are_the_converters_imports_pinned_to_this_tensorflow() -> None:
    import tensorflow as tf

    pins = _requirements()
    assert set(pins) == {"tensorflowjs", "tensorflow-hub", "tf-keras"}
    assert pins["tensorflowjs"] == tfjs.TFJS_VERSION
    # tf_keras refuses (or misbehaves with) a TensorFlow of another minor version.
    assert pins["tf-keras"].split(".")[:2] == tf.__version__.split(".")[:2], (pins, tf.__version__)


def test_node_packages_are_locked_to_the_same_tfjs_version() -> None:
    package = json.loads((tfjs.ASSETS / "package.json").read_text())
    lock = json.loads((tfjs.ASSETS / "package-lock.json").read_text())
    assert package["dependencies"] == {"@tensorflow/tfjs": tfjs.TFJS_VERSION}
    packages = lock["packages"]
    assert packages["node_modules/@tensorflow/tfjs"]["version"] == tfjs.TFJS_VERSION
    # npm ci installs exactly these: every entry carries its integrity hash.
    assert all(entry.get("integrity", "").startswith("sha512-") for key, entry in packages.items() if key)


def test_a_step_past_the_time_bound_is_stopped_with_one_line_naming_the_log(tmp_path) -> None:
    log = tmp_path / "install.log"
    began = time.monotonic()
    with pytest.raises(ExportError) as raised:
        tfjs._run_logged(
            [sys.executable, "-c", "import time; print('downloading', flush=True); time.sleep(60)"],
            what="pip install (the converter)",
            log=log,
            deadline=time.monotonic() + 1.0,
            limit_s=1.0,
            hint=tfjs._NETWORK_HINT,
        )
    message = str(raised.value)
    assert time.monotonic() - began < 10
    assert "\n" not in message
    assert message == (
        f"tfjs: pip install (the converter) did not finish within 1s; see {log} "
        "(a slow network: raise TFPILOT_TFJS_INSTALL_TIMEOUT_S)"
    )
    assert "downloading" in log.read_text()


def test_a_failing_step_names_its_last_line_and_the_log(tmp_path) -> None:
    log = tmp_path / "install.log"
    command = [
        sys.executable,
        "-c",
        "import sys; print('Collecting x'); print('ERROR: No matching distribution'); sys.exit(3)",
    ]
    with pytest.raises(ExportError) as raised:
        tfjs._run_logged(
            command, what="pip install (the converter)", log=log, deadline=time.monotonic() + 60, limit_s=60
        )
    assert str(raised.value) == (
        f"tfjs: pip install (the converter) failed (exit 3): ERROR: No matching distribution; see {log}"
    )


def test_a_running_step_reports_how_far_it_is(tmp_path, monkeypatch, caplog) -> None:
    monkeypatch.setattr(tfjs, "_HEARTBEAT_S", 0.2)
    with caplog.at_level(logging.INFO, logger="tfpilot.export.tfjs"):
        tfjs._run_logged(
            [sys.executable, "-c", "import time; time.sleep(1.0)"],
            what="npm ci (@tensorflow/tfjs)",
            label="tfjs [2/2] npm ci",
            log=tmp_path / "install.log",
            deadline=time.monotonic() + 60,
            limit_s=60,
            how_far=lambda: "12/69 packages",
        )
    lines = [r.getMessage() for r in caplog.records]
    assert lines and all(re.fullmatch(r"tfjs \[2/2\] npm ci: \d+s so far, 12/69 packages", line) for line in lines)


def test_without_node_it_stops_before_downloading_anything(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TFPILOT_TOOLS_DIR", str(tmp_path / "tools"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(ExportError, match=r"`node`/`npm` is not installed; install Node.js 18\+"):
        tfjs.ensure_tfjs_tools()
    assert not (tmp_path / "tools" / "tfjs" / "site").exists()


@pytest.mark.parametrize("value", ["soon", "0", "-5"])
def test_the_install_bound_must_be_positive_seconds(monkeypatch, value) -> None:
    monkeypatch.setenv("TFPILOT_TFJS_INSTALL_TIMEOUT_S", value)
    with pytest.raises(ExportError, match="TFPILOT_TFJS_INSTALL_TIMEOUT_S must be a number of seconds > 0"):
        tfjs.install_timeout_s()


def test_show_log_lines_prints_an_engines_info_lines_once(capsys) -> None:
    from tfpilot.cli.render import show_log_lines

    logger = logging.getLogger("tfpilot.export.tfjs")
    with show_log_lines("tfpilot.export.tfjs"):
        logger.info("tfjs [1/2] pip: done in 3s")
    logger.info("not shown after the block")
    err = capsys.readouterr().err
    assert err.count("tfjs [1/2] pip: done in 3s") == 1
    assert "not shown" not in err
