"""tfpilot.fit on models built under a distribution strategy: MirroredStrategy with two replicas
trains as model.fit does, and the NaN guard runs there: a batch that is bad on one replica is
refused on every replica, with the state it changed (BatchNormalization statistics, each
replica's metric totals) put back, as after model.fit on the data without that batch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("mirrored") / "result.json"
    script = Path(__file__).with_name("_fit_mirrored_check.py")
    completed = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(out.read_text())


def test_a_mirrored_model_trains_as_under_model_fit_with_the_guard_on(result):
    clean = result["clean"]
    # a dataset of unknown length: model.fit counts an optimizer step (and AdamW's decay) on the call
    # that finds its end, and so must the guard, in the cross-replica context
    assert clean["ours"] == clean["theirs"]
    assert clean["same_weights"]
    assert "FIT-GUARD-OFF" not in clean["codes"]


def test_a_batch_bad_on_one_replica_is_refused_on_all_as_if_it_were_not_there(result):
    skip = result["skip"]
    assert skip["finite"]
    assert "TRAIN-SKIPPED-BATCHES" in skip["codes"]
    assert skip["same_weights"]
    # each replica's metric totals put back: the epoch's loss is that of the three good batches
    assert skip["ours"] == skip["reference"]


def test_the_stop_policy_halts_every_replica(result):
    stop = result["stop"]
    assert stop["raised"] is not None and "training stopped" in stop["raised"]
    assert stop["finite"]


def test_an_own_train_step_is_guarded_on_every_replica(result):
    own = result["own_step"]
    assert own["finite"]
    assert "TRAIN-SKIPPED-BATCHES" in own["codes"]


def test_one_device_strategy_is_guarded(result):
    one = result["one_device"]
    assert one["finite"]
    assert "TRAIN-SKIPPED-BATCHES" in one["codes"]
    assert "FIT-GUARD-OFF" not in one["codes"]


def test_a_mirrored_run_resumes_where_it_stopped(result):
    # two epochs, then resume=True to three: the same losses as three epochs in one run
    assert result["resume"]["resumed"] == result["resume"]["whole"]
