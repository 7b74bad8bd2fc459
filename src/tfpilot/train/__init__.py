"""Training: compiled steps, the outer loop, strategies, checkpoints, summaries, hooks."""

from tfpilot.train.callbacks import HookList, TrainHook
from tfpilot.train.checkpoint import CheckpointStore, TrainingState
from tfpilot.train.early_stopping import EarlyStopping
from tfpilot.train.optim import build_optimizer, build_schedule
from tfpilot.train.step import StepFunctions
from tfpilot.train.strategy import is_chief, make_strategy
from tfpilot.train.trainer import Trainer, TrainResult, load_history, seed_everything

__all__ = [
    "Trainer",
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
    "seed_everything",
    "load_history",
]
