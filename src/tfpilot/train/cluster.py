"""Which cluster this process belongs to, as a cluster manager described it.

Two managers set the environment before the script starts:
  * TF_CONFIG: `tfpilot launch`, Kubernetes' TFJob (Kubeflow training operator), Vertex AI, ...
  * Slurm: `srun` sets SLURM_PROCID / SLURM_STEP_NUM_TASKS / SLURM_STEP_NODELIST / SLURM_STEP_TASKS_PER_NODE
    for every task of a job step; TensorFlow's SlurmClusterResolver turns them into a cluster spec.

TF_CONFIG wins when both are present: a TFJob pod scheduled by a Slurm-aware launcher still means
what its TF_CONFIG says. A Slurm step with one task (a plain `sbatch` script, `srun -n 1`) is not a
cluster: it trains on the local devices.
"""

from __future__ import annotations

import enum
import json
import os

import tensorflow as tf

from tfpilot.errors import TrainError

__all__ = ["ClusterManager", "cluster_manager", "slurm_resolver", "task_rank", "SLURM_PORT_BASE_ENV"]

# SlurmClusterResolver gives task i of a node the port base + i; the base is TensorFlow's default
# unless the job sets this (two jobs sharing a node need different bases).
SLURM_PORT_BASE_ENV = "TFPILOT_SLURM_PORT_BASE"
_DEFAULT_SLURM_PORT_BASE = 8888


class ClusterManager(enum.StrEnum):
    NONE = "none"
    TF_CONFIG = "tf_config"
    SLURM = "slurm"


def _slurm_tasks() -> int:
    raw = os.environ.get("SLURM_STEP_NUM_TASKS") or os.environ.get("SLURM_NTASKS") or "1"
    try:
        return int(raw)
    except ValueError:
        raise TrainError(f"SLURM_STEP_NUM_TASKS is `{raw}`, expected a number of tasks", exit_code=2) from None


def cluster_manager() -> ClusterManager:
    if os.environ.get("TF_CONFIG"):
        return ClusterManager.TF_CONFIG
    if "SLURM_PROCID" in os.environ and _slurm_tasks() > 1:
        return ClusterManager.SLURM
    return ClusterManager.NONE


def slurm_resolver() -> tf.distribute.cluster_resolver.ClusterResolver:
    """The resolver for this Slurm step: one worker per task, ports from TFPILOT_SLURM_PORT_BASE."""
    missing = [
        name for name in ("SLURM_PROCID", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE") if name not in os.environ
    ]
    if missing:
        raise TrainError(
            f"a Slurm step with {_slurm_tasks()} tasks but {', '.join(missing)} unset; start the workers with "
            "`srun` (which sets them) or set TF_CONFIG instead",
            exit_code=2,
        )
    raw_base = os.environ.get(SLURM_PORT_BASE_ENV, str(_DEFAULT_SLURM_PORT_BASE))
    try:
        port_base = int(raw_base)
    except ValueError:
        raise TrainError(f"{SLURM_PORT_BASE_ENV} is `{raw_base}`, expected a port number", exit_code=2) from None
    # The GPU count is read from the devices, not from nvidia-smi (which the resolver would run
    # otherwise and which CPU nodes lack); the resolver then gives each task its share.
    gpus = len(tf.config.list_physical_devices("GPU"))
    try:
        if gpus:
            return tf.distribute.cluster_resolver.SlurmClusterResolver(
                jobs={"worker": _slurm_tasks()}, port_base=port_base, gpus_per_node=gpus, auto_set_gpu=True
            )
        # On CPU nodes SlurmClusterResolver divides by its GPUs per task (0) and fails with
        # "range() arg 3 must not be zero" (TF 2.21). Let it lay out the hosts and ports with one
        # nominal GPU per task and no GPU assignment, then hand MultiWorkerMirrored a resolver
        # that reports no accelerators, so it runs on the CPU.
        layout = tf.distribute.cluster_resolver.SlurmClusterResolver(
            jobs={"worker": _slurm_tasks()},
            port_base=port_base,
            gpus_per_node=_slurm_tasks(),
            gpus_per_task=1,
            auto_set_gpu=False,
        )
        return tf.distribute.cluster_resolver.SimpleClusterResolver(
            layout.cluster_spec(), task_type="worker", task_id=int(os.environ["SLURM_PROCID"]), rpc_layer="grpc"
        )
    except (RuntimeError, ValueError) as exc:
        raise TrainError(f"the Slurm environment does not describe a cluster TensorFlow can use: {exc}") from None


def task_rank() -> tuple[str, int, bool]:
    """(task type, index, whether the cluster names a separate chief) for this process."""
    manager = cluster_manager()
    if manager == ClusterManager.TF_CONFIG:
        config = json.loads(os.environ["TF_CONFIG"])
        task = config.get("task", {})
        return str(task.get("type", "worker")), int(task.get("index", 0)), "chief" in config.get("cluster", {})
    if manager == ClusterManager.SLURM:
        return "worker", int(os.environ["SLURM_PROCID"]), False
    return "worker", 0, False
