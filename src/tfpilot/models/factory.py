"""Resolve `model.name` to a keras.Model: a built-in, or a user factory `package.module:function`."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

import keras

from tfpilot.config.schema import ModelConfig
from tfpilot.errors import ModelError
from tfpilot.models import builtin
from tfpilot.models.logits import strip_final_softmax

__all__ = ["build_model", "register_model"]

_BUILTIN: dict[str, Callable[..., keras.Model]] = {"mlp": builtin.mlp, "cnn": builtin.cnn}


def register_model(name: str, factory: Callable[..., keras.Model]) -> None:
    """Add a built-in architecture (used by the text model module)."""
    _BUILTIN[name] = factory


def _user_factory(spec: str) -> Callable[..., keras.Model]:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelError(
            f"`model.name` `{spec}`: cannot import module `{module_name}` ({exc}); make it importable "
            "(install the package or add its folder to PYTHONPATH)"
        ) from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ModelError(
            f"`model.name` `{spec}`: `{module_name}` has no callable `{attr}`; expected a function returning a keras.Model"
        )
    return factory


def build_model(
    config: ModelConfig, *, input_shape: Any, num_classes: int, vocab_size: int | None = None
) -> keras.Model:
    """Build the core model (preprocessed input -> logits).

    ``vocab_size`` (token ids are < vocab_size) comes from a text preprocessor; the text model
    sizes its embedding with it and user factories may accept it as a keyword."""
    if config.name == "text" and "text" not in _BUILTIN:
        import tfpilot.models.text  # noqa: F401  (registers itself)
    if config.name in _BUILTIN:
        try:
            extra = {"vocab_size": vocab_size} if config.name == "text" and vocab_size else {}
            model = _BUILTIN[config.name](config, input_shape=input_shape, num_classes=num_classes, **extra)
        except ValueError as exc:
            raise ModelError(f"`model.name` `{config.name}`: {exc}") from None
    else:
        factory = _user_factory(config.name)
        available = inspect.signature(factory).parameters
        offered = {
            "input_shape": input_shape,
            "num_classes": num_classes,
            **({"vocab_size": vocab_size} if vocab_size else {}),
            **config.kwargs,
        }
        accepts_all = any(p.kind == p.VAR_KEYWORD for p in available.values())
        kwargs = offered if accepts_all else {k: v for k, v in offered.items() if k in available}
        try:
            model = factory(**kwargs)
        except Exception as exc:
            # One line for the CLI; `--debug` still shows the user's traceback through the cause.
            first_line = (str(exc).strip().splitlines() or [""])[0]
            raise ModelError(
                f"`model.name` `{config.name}` raised {type(exc).__name__}: {first_line}; "
                "fix the factory (it is called with input_shape, num_classes and model.kwargs)"
            ) from exc
    if not isinstance(model, keras.Model):
        raise ModelError(f"`model.name` `{config.name}` returned {type(model).__name__}; expected a keras.Model")
    model = strip_final_softmax(model)
    if model.outputs and model.outputs[0].shape[-1] != num_classes:
        raise ModelError(
            f"`model.name` `{config.name}` outputs {model.outputs[0].shape[-1]} units; expected {num_classes} logit(s) (one per class; one in all for model.task binary or regression)"
        )
    return model
