"""Name conventions the rules use when types are unknowable statically.

A linter without type inference has to guess what ``model`` or ``train_ds`` is. These guesses
are deliberately narrow: a rule that uses them only fires when the name *and* the surrounding
code agree (a call inside a GradientTape block, a chain of dataset methods), so ordinary
Python code that happens to use such a name is not flagged.
"""

from __future__ import annotations

import re

__all__ = [
    "is_training_step_name",
    "is_model_name",
    "is_frozen_model_name",
    "is_dataset_name",
    "is_metric_name",
    "is_recurrent_name",
    "is_evaluation_name",
]

_MODEL_WORDS = (
    "model",
    "net",
    "network",
    "encoder",
    "decoder",
    "generator",
    "discriminator",
    "critic",
    "actor",
    "classifier",
    "backbone",
    "student",
    "teacher",
    "policy",
    "autoencoder",
)
_FROZEN_WORDS = ("teacher", "target", "frozen", "ema", "pretrained", "reference")
_DATASET_RE = re.compile(r"(^|_)(ds|dataset|datasets|data_set)(_|$)", re.IGNORECASE)
_METRIC_RE = re.compile(r"metric|acc|loss|auc|precision|recall|mean|mae|mse|iou|f1|error|tracker", re.IGNORECASE)
_RECURRENT_RE = re.compile(r"lstm|gru|rnn|recurrent|bidirectional|cell", re.IGNORECASE)
_TRAINING_STEP_RE = re.compile(r"train|step|update|fit", re.IGNORECASE)
_EVALUATION_RE = re.compile(
    r"(^|_)(val|valid|validate|validation|eval|evaluate|evaluation|test|testing|predict|"
    r"prediction|infer|inference|serve|serving)(_|$)",
    re.IGNORECASE,
)


def is_model_name(name: str) -> bool:
    """``model``, ``self.model``'s ``model``, ``base_model``, ``encoder``, ``q_network``..."""
    lower = name.lower()
    if lower in _MODEL_WORDS or lower.endswith("model"):
        return True
    # `q_network`, and the pairs of image-to-image GANs: `generator_AB`, `discriminator_B`.
    return any(lower.endswith("_" + word) or _pair_suffix(lower, word) for word in _MODEL_WORDS)


def _pair_suffix(lower: str, word: str) -> bool:
    """`generator_ab`, `discriminator_b`, `encoder_2`: a model word and a short tag of letters or digits."""
    head, _, tag = lower.rpartition("_")
    return head == word and 0 < len(tag) <= 2 and tag.isalnum()


def is_frozen_model_name(name: str) -> bool:
    """Models usually called in inference mode on purpose (distillation teacher, RL target)."""
    lower = name.lower()
    return any(word in lower for word in _FROZEN_WORDS)


def is_dataset_name(name: str) -> bool:
    return bool(_DATASET_RE.search(name))


def is_metric_name(name: str) -> bool:
    return bool(_METRIC_RE.search(name)) and not is_model_name(name)


def is_recurrent_name(name: str) -> bool:
    return bool(_RECURRENT_RE.search(name))


def is_training_step_name(name: str) -> bool:
    """``train_step``, ``distributed_step``, ``update``: a function that runs one training step."""
    return bool(_TRAINING_STEP_RE.search(name)) and not is_evaluation_name(name)


def is_evaluation_name(name: str) -> bool:
    """Function or variable names that mean validation/evaluation/inference code."""
    return bool(_EVALUATION_RE.search(name))
