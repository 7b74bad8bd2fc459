"""Threshold parsing and checks, and the atomic, blessing-guarded push (real files, no TF needed)."""

from __future__ import annotations

import json
import os

import pytest

from tfpilot.config.schema import GateThreshold
from tfpilot.errors import MonitorError
from tfpilot.monitor import Blessing, parse_threshold, push_blessed
from tfpilot.monitor.gate import blessing_path, check_thresholds, model_fingerprint


@pytest.mark.parametrize(
    ("text", "metric", "op", "value", "relative"),
    [
        ("accuracy>=0.95", "accuracy", ">=", 0.95, False),
        ("accuracy change >= -0.005", "accuracy", ">=", -0.005, True),
        (" loss change<1e-2 ", "loss", "<", 0.01, True),
        ("loss <= 0.3", "loss", "<=", 0.3, False),
    ],
)
def test_parse_threshold(text, metric, op, value, relative):
    parsed = parse_threshold(text)
    assert (parsed.metric, parsed.op, parsed.value, parsed.relative) == (metric, op, pytest.approx(value), relative)


@pytest.mark.parametrize("text", ["accuracy", "accuracy => 1", "acc>=0.9", "accuracy >= high"])
def test_bad_thresholds_are_rejected(text):
    with pytest.raises(MonitorError):
        parse_threshold(text)


def test_checks_absolute_and_relative():
    candidate, baseline = {"accuracy": 0.96, "loss": 0.2}, {"accuracy": 0.97, "loss": 0.25}
    results = check_thresholds(
        [
            parse_threshold("accuracy>=0.95"),
            parse_threshold("accuracy change>=-0.005"),
            parse_threshold("loss change<=0"),
        ],
        candidate=candidate,
        baseline=baseline,
    )
    assert [r.passed for r in results] == [True, False, True]
    assert results[1].observed == pytest.approx(-0.01)


def test_an_empty_threshold_list_is_an_error_not_a_pass():
    with pytest.raises(MonitorError, match="no thresholds"):
        check_thresholds([], candidate={"accuracy": 1.0}, baseline={"accuracy": 0.0})


def _run_with_model(tmp_path, *, blessed: bool | None):
    run = tmp_path / "run"
    model = run / "model" / "1"
    (model / "variables").mkdir(parents=True)
    (run / "config.yaml").write_text("data: {kind: arrays}\n")
    (model / "saved_model.pb").write_bytes(b"graph")
    (model / "variables" / "variables.index").write_bytes(b"weights")
    if blessed is not None:
        blessing = Blessing(
            blessed=blessed,
            candidate={"model_path": str(model), "fingerprint": model_fingerprint(model)},
            baseline={},
            checks=[],
            split="test",
            examples=10,
            data_fingerprint="",
            created_at=0.0,
        )
        blessing_path(run).write_text(json.dumps(blessing.to_dict()))
    return run, model


def test_push_copies_a_blessed_model_as_the_next_version(tmp_path):
    run, model = _run_with_model(tmp_path, blessed=True)
    base = tmp_path / "serving"
    (base / "3").mkdir(parents=True)
    (base / "notes").mkdir()
    result = push_blessed(run, base)
    assert result.version == 4 and result.path == base / "4"
    assert (base / "4" / "variables" / "variables.index").read_bytes() == b"weights"
    assert model_fingerprint(base / "4") == model_fingerprint(model)
    assert not [p for p in os.listdir(base) if p.startswith(".")]  # no staging directory left behind
    assert os.stat(base / "4").st_mode & 0o005  # readable by a server running as another user
    assert push_blessed(run, base).version == 5


@pytest.mark.parametrize("blessed", [False, None])
def test_push_refuses_unblessed_or_unvalidated_models(tmp_path, blessed):
    run, _ = _run_with_model(tmp_path, blessed=blessed)
    base = tmp_path / "serving"
    with pytest.raises(MonitorError) as raised:
        push_blessed(run, base)
    assert raised.value.exit_code == 1
    assert not base.exists() or not any(base.iterdir())


def test_push_refuses_a_model_changed_after_blessing(tmp_path):
    run, model = _run_with_model(tmp_path, blessed=True)
    (model / "variables" / "variables.index").write_bytes(b"retrained")
    with pytest.raises(MonitorError, match="changed after it was blessed"):
        push_blessed(run, tmp_path / "serving")


def test_gate_threshold_config_type_is_reused():
    assert isinstance(parse_threshold("accuracy>=0.9"), GateThreshold)
