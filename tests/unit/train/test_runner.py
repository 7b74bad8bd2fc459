"""The layers under the Trainer's one loop: Topology computed once, the compiled runner's calls,
and the NaN policy for steps whose batch is not known (asynchronous parameter servers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from test_trainer_basic import make_trainer

from tfpilot.errors import TrainError
from tfpilot.train import CompiledRunner, Execution, NanGuard, Topology, Trainer


def test_topology_of_the_default_strategy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TF_CONFIG", raising=False)
    topology = Topology.of(tf.distribute.get_strategy())
    assert topology == Topology(replicas=1, multi_worker=False, chief=True, parameter_server=False, distributed=False)


def test_trainer_is_one_class_whose_runner_runs_windows_of_steps(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path, epochs=1, steps_per_execution=3, jit_compile=False)
    assert type(trainer) is Trainer and isinstance(trainer.runner, CompiledRunner)
    assert trainer.steps_per_execution == trainer.runner.steps_per_execution == 3
    trainer.runner.begin_epoch(0, skip_batches=0)
    first = trainer.runner.run(2)
    assert first == Execution(steps_run=2, nonfinite=0, global_step=2, located=True)
    # The epoch has 6 batches (168 rows / 32): a call never runs past the end of the input.
    rest = trainer.runner.run(10)
    assert (rest.steps_run, rest.global_step) == (4, 6)
    assert trainer.runner.run(3).steps_run == 0
    # Evaluation through the runner equals scoring the arrays outside any compiled step.
    logits, labels = trainer.runner.local_logits("validation")
    np.testing.assert_allclose(
        trainer.runner.evaluate("validation")["loss"], trainer.head.evaluate_arrays(labels, logits)["loss"], rtol=1e-5
    )


def test_unlocated_nonfinite_steps_follow_the_policy_and_say_the_batch_is_unknown() -> None:
    guard = NanGuard(policy="skip_batch", max_retries=2, location="runs/x")
    assert guard.on_nonfinite(epoch=0, batch_index=-1, global_step=7, evidence=None) == "skipped"
    assert guard.on_nonfinite(epoch=1, batch_index=-1, global_step=15, evidence=None) == "skipped"
    with pytest.raises(TrainError, match="asynchronous parameter-server step"):
        guard.on_nonfinite(epoch=1, batch_index=-1, global_step=16, evidence=None)
    (finding,) = guard.findings
    assert "batch unknown" in finding.message and "retry limit" in finding.message
    assert finding.evidence["batch_index"] == -1
