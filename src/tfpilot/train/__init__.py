"""Training: compiled steps, the outer loop, strategies, checkpoints, summaries, hooks."""

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
