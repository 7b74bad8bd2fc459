"""Which cluster manager described this process: TF_CONFIG, a Slurm step, or none."""

from __future__ import annotations

import json

import pytest

from tfpilot.errors import TrainError
from tfpilot.train.cluster import ClusterManager, cluster_manager, slurm_resolver, task_rank
from tfpilot.train.strategy import is_chief


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name == "TF_CONFIG" or name.startswith("SLURM_"):
            monkeypatch.delenv(name)


def slurm(monkeypatch: pytest.MonkeyPatch, *, rank: int, tasks: int, nodes: str = "localhost") -> None:
    monkeypatch.setenv("SLURM_PROCID", str(rank))
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", str(tasks))
    monkeypatch.setenv("SLURM_STEP_NODELIST", nodes)
    monkeypatch.setenv("SLURM_STEP_TASKS_PER_NODE", f"{tasks}")


def test_no_manager_is_one_local_chief() -> None:
    assert cluster_manager() == ClusterManager.NONE
    assert task_rank() == ("worker", 0, False) and is_chief()


def test_a_one_task_slurm_step_is_not_a_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    slurm(monkeypatch, rank=0, tasks=1)
    assert cluster_manager() == ClusterManager.NONE


def test_slurm_rank_0_is_the_chief_and_rank_1_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    slurm(monkeypatch, rank=1, tasks=2)
    assert cluster_manager() == ClusterManager.SLURM and not is_chief()
    slurm(monkeypatch, rank=0, tasks=2)
    assert is_chief()


def test_slurm_cluster_spec_on_cpu_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two nodes with two tasks each: task i of a node listens on the base port + i.
    monkeypatch.setenv("SLURM_PROCID", "3")
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "4")
    monkeypatch.setenv("SLURM_STEP_NODELIST", "node[01-02]")
    monkeypatch.setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2)")
    monkeypatch.setenv("TFPILOT_SLURM_PORT_BASE", "9100")
    resolver = slurm_resolver()
    assert resolver.cluster_spec().as_dict() == {"worker": ["node01:9100", "node01:9101", "node02:9100", "node02:9101"]}
    assert (resolver.task_type, resolver.task_id) == ("worker", 3)
    assert not resolver.num_accelerators()


def test_tf_config_wins_over_slurm(monkeypatch: pytest.MonkeyPatch) -> None:
    slurm(monkeypatch, rank=1, tasks=2)
    cluster = {"chief": ["a:1"], "worker": ["b:1"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": "chief", "index": 0}}))
    assert cluster_manager() == ClusterManager.TF_CONFIG and is_chief()


def test_a_slurm_step_without_its_node_list_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    slurm(monkeypatch, rank=0, tasks=2)
    monkeypatch.delenv("SLURM_STEP_NODELIST")
    with pytest.raises(TrainError, match="SLURM_STEP_NODELIST unset"):
        slurm_resolver()
