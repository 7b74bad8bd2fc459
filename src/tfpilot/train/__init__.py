"""Training: compiled steps, the outer loop, strategies, checkpoints, summaries, hooks.

The names below are imported on first use (PEP 562): `tfpilot.fit` imports `tfpilot.train.fit`,
which needs the guard, the summaries and a few step helpers, and importing the trainer, the step
tuner and the cluster launchers with it made a user's first `tfpilot.fit` call slower.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tfpilot.train.autotune import StepChoice, choose_step_settings
    from tfpilot.train.callbacks import HookList, TrainHook
    from tfpilot.train.checkpoint import CheckpointStore, TrainingState
    from tfpilot.train.early_stopping import EarlyStopping
    from tfpilot.train.guard import NanGuard, replay_with_check_numerics
    from tfpilot.train.launch import launch_parameter_server, launch_workers
    from tfpilot.train.optim import build_optimizer, build_schedule
    from tfpilot.train.preemption import Preempted, PreemptionWatcher
    from tfpilot.train.ps import CoordinatorRunner
    from tfpilot.train.runner import CompiledRunner, Execution, Runner
    from tfpilot.train.step import StepFunctions
    from tfpilot.train.strategy import is_chief, make_strategy
    from tfpilot.train.topology import Topology
    from tfpilot.train.trainer import Trainer, TrainResult, load_history, seed_everything

_LAZY = {
    "StepChoice": "tfpilot.train.autotune",
    "choose_step_settings": "tfpilot.train.autotune",
    "HookList": "tfpilot.train.callbacks",
    "TrainHook": "tfpilot.train.callbacks",
    "CheckpointStore": "tfpilot.train.checkpoint",
    "TrainingState": "tfpilot.train.checkpoint",
    "EarlyStopping": "tfpilot.train.early_stopping",
    "NanGuard": "tfpilot.train.guard",
    "replay_with_check_numerics": "tfpilot.train.guard",
    "launch_parameter_server": "tfpilot.train.launch",
    "launch_workers": "tfpilot.train.launch",
    "build_optimizer": "tfpilot.train.optim",
    "build_schedule": "tfpilot.train.optim",
    "Preempted": "tfpilot.train.preemption",
    "PreemptionWatcher": "tfpilot.train.preemption",
    "CoordinatorRunner": "tfpilot.train.ps",
    "CompiledRunner": "tfpilot.train.runner",
    "Execution": "tfpilot.train.runner",
    "Runner": "tfpilot.train.runner",
    "StepFunctions": "tfpilot.train.step",
    "is_chief": "tfpilot.train.strategy",
    "make_strategy": "tfpilot.train.strategy",
    "Topology": "tfpilot.train.topology",
    "Trainer": "tfpilot.train.trainer",
    "TrainResult": "tfpilot.train.trainer",
    "load_history": "tfpilot.train.trainer",
    "seed_everything": "tfpilot.train.trainer",
}

__all__ = [
    "Trainer",
    "Runner",
    "CompiledRunner",
    "CoordinatorRunner",
    "Execution",
    "Topology",
    "TrainResult",
    "TrainHook",
    "HookList",
    "StepFunctions",
    "CheckpointStore",
    "TrainingState",
    "EarlyStopping",
    "build_optimizer",
    "build_schedule",
    "make_strategy",
    "is_chief",
    "NanGuard",
    "replay_with_check_numerics",
    "StepChoice",
    "choose_step_settings",
    "launch_workers",
    "launch_parameter_server",
    "Preempted",
    "PreemptionWatcher",
    "seed_everything",
    "load_history",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'tfpilot.train' has no attribute {name!r}")
