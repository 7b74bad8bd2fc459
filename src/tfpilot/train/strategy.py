"""Pick a tf.distribute strategy from `train.strategy`."""

from __future__ import annotations

import json
import os

import tensorflow as tf

from tfpilot.config.schema import Strategy
from tfpilot.errors import TrainError
from tfpilot.train.cluster import ClusterManager, cluster_manager, slurm_resolver, task_rank

__all__ = ["make_strategy", "is_chief", "uses_parameter_server", "prepare_strategy"]

# One multi-worker strategy per process: TensorFlow configures collective ops once, at startup.
_MULTI_WORKER: list[tf.distribute.Strategy] = []


def uses_parameter_server(kind: Strategy) -> bool:
    """parameter_server, or auto inside a cluster that has ps tasks (`tfpilot launch --ps M`)."""
    if kind == Strategy.PARAMETER_SERVER:
        return True
    raw = os.environ.get("TF_CONFIG")
    return kind == Strategy.AUTO and raw is not None and bool(raw) and "ps" in json.loads(raw).get("cluster", {})


def make_strategy(kind: Strategy) -> tf.distribute.Strategy:
    if kind == Strategy.AUTO:
        if cluster_manager() != ClusterManager.NONE:
            kind = Strategy.MULTI_WORKER
        elif len(tf.config.list_logical_devices("GPU")) > 1:
            kind = Strategy.MIRRORED
        else:
            kind = Strategy.DEFAULT
    if kind == Strategy.DEFAULT:
        return tf.distribute.get_strategy()
    if kind == Strategy.MIRRORED:
        # MirroredStrategy() alone uses only CPU:0 when there is no GPU; use every logical device so
        # logical CPU devices stand in for several accelerators (tests, dry runs).
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in (gpus or tf.config.list_logical_devices("CPU"))]
        return tf.distribute.MirroredStrategy(devices=devices)
    if kind == Strategy.MULTI_WORKER:
        manager = cluster_manager()
        if manager == ClusterManager.NONE:
            raise TrainError(
                "`train.strategy` is multi_worker but neither TF_CONFIG nor a Slurm step with several tasks is set; "
                "start workers with `tfpilot launch --workers N -- tfpilot train CONFIG`, `srun -n N tfpilot train "
                "CONFIG`, or a cluster manager that sets TF_CONFIG",
                exit_code=2,
            )
        # `tfpilot launch --timeout S` bounds every collective, so a dead peer fails the step
        # instead of hanging it.
        timeout = os.environ.get("TFPILOT_COLLECTIVE_TIMEOUT_S")
        options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=float(timeout) if timeout else None)
        if _MULTI_WORKER:
            return _MULTI_WORKER[0]
        resolver = slurm_resolver() if manager == ClusterManager.SLURM else None
        strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver, communication_options=options)
        _MULTI_WORKER.append(strategy)
        return strategy
    if kind == Strategy.PARAMETER_SERVER:
        # Steps must be scheduled through a ClusterCoordinator, which the compiled loop does not do;
        # the Trainer runs parameter_server steps through its CoordinatorRunner (train/ps.py) instead.
        from tfpilot.train.ps import parameter_server_strategy

        return parameter_server_strategy()
    raise TrainError(f"unknown strategy `{kind}`", exit_code=2)


def prepare_strategy(kind: Strategy) -> None:
    """Create a multi-worker strategy before any TensorFlow op runs ("Collective ops must be
    configured at program startup"): loading a TFRecord source runs ops before the Trainer exists."""
    multi = kind == Strategy.MULTI_WORKER or (kind == Strategy.AUTO and cluster_manager() != ClusterManager.NONE)
    if multi and not uses_parameter_server(kind):
        make_strategy(kind)


def is_chief() -> bool:
    """The chief writes checkpoints, summaries and exports; other workers write to throwaway dirs."""
    kind, index, has_chief = task_rank()
    return kind == "chief" or (not has_chief and kind == "worker" and index == 0)
