"""`tfpilot.fit`: `model.fit` for a model of the user's own, plus tfpilot's guardrails and run directory.

Design (parity by construction). The training loop is Keras' own `model.fit`: its data adapters
(arrays, dicts, strings, tf.data, generators, keras.utils.PyDataset, validation_split,
class_weight, sample weights), its callbacks with the same calls and logs, its History, its
steps_per_execution loop and jit_compile setting, and the model's own `train_step` /
`test_step` / `compute_loss` (add_loss included, sparse gradients kept as IndexedSlices, loss
scaling). tfpilot adds only:

* the NaN guard, inside the step (guarded_step.py) and on the host (callbacks.GuardCallback);
* the run directory (callbacks.RunDirCallback): config.yaml, history.json, checkpoints and
  resume, TensorBoard logs (tfpilot's writers, epoch scalars), metrics.json, findings.json and fit/
  (artifacts.py) for `tfpilot evaluate` / `tfpilot export`;
* early stopping and clipping when asked, as Keras' EarlyStopping and the optimizer's own
  `global_clipnorm`.

An earlier version re-implemented the step (tfpilot's compiled loop with Keras' compile
containers); it ignored overridden train_step, dropped add_loss from the logged loss and
densified embedding gradients. Running Keras' loop removes that whole class of drift.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import logging
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tfpilot._tf_private import first_call_shapes, validation_split_of
from tfpilot.errors import ConfigError, DataError, ModelError, TfpilotError, TrainError
from tfpilot.findings import Finding, Severity, write_findings
from tfpilot.rundir import RunDir
from tfpilot.train.fit.artifacts import (
    first_line,
    leading_rows,
    op_error_line,
    save_model,
    save_sample,
    save_validation,
    write_spec,
)
from tfpilot.train.fit.callbacks import GuardCallback, RunDirCallback
from tfpilot.train.fit.deferred_loop import DeferredLoop
from tfpilot.train.fit.guarded_step import (
    GuardedStep,
    applied_steps,
    defines_call,
    host_state_kept,
    model_optimizers,
    overrides_train_step,
    states_kept,
)
from tfpilot.train.fit.sample_rows import finite_rows, probe_rows
from tfpilot.train.guard import NanGuard, nonfinite_inputs
from tfpilot.train.overfitting import overfitting_findings
from tfpilot.train.step import is_default_strategy

logger = logging.getLogger("tfpilot.fit")

__all__ = ["fit", "FitResult"]

# model.compile's arguments, accepted by tfpilot.fit to compile (or recompile) the model.
_COMPILE_ARGUMENTS = ("optimizer", "loss", "loss_weights", "metrics", "weighted_metrics")
# tfpilot's own options (train config fields) that mean something around Keras' loop.
_OPTIONS = {
    "nan_policy",
    "nan_max_retries",
    "early_stopping",
    "max_checkpoints",
    "steps_per_execution",
    "jit_compile",
    "clip_norm",
    "seed",
    "deterministic",
    "overfit_patience",
    "histogram_every_epochs",
}
_REFUSED = {
    "label_smoothing": "pass it to the loss, e.g. keras.losses.BinaryCrossentropy(label_smoothing=0.1)",
    "mixed_precision": "build the model after keras.mixed_precision.set_dtype_policy('mixed_float16'); "
    "model.compile then adds loss scaling",
    "l2": "give the layers kernel_regularizer=keras.regularizers.L2(...); the penalty is then in the logged loss",
    "checkpoint_every_steps": "tfpilot.fit checkpoints at the end of an epoch (at most every checkpoint_every_secs, "
    "0 for every epoch) and resumes at an epoch boundary, as Keras' BackupAndRestore does",
    "strategy": "build and compile the model inside `with strategy.scope():`; model.fit (and so tfpilot.fit) "
    "trains under that strategy",
    "hooks": "pass Keras callbacks with callbacks=[...]",
}


@dataclasses.dataclass
class FitResult:
    """What tfpilot.fit returns: the per-epoch rows (as history.json), the findings and Keras' History."""

    history: list[dict[str, float]]
    findings: list[Finding]
    stopped_early: bool
    epochs_run: int
    global_step: int
    keras_history: Any
    run: RunDir


def _fresh_run_name(model: keras.Model, runs_dir: str | Path) -> str:
    """`<model name>-<YYYYmmdd-HHMMSS>`, never an existing run's (a second call in the same second gets `-2`)."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(getattr(model, "name", "") or "model")).lstrip("._-") or "model"
    stamp = f"{base}-{time.strftime('%Y%m%d-%H%M%S')}"
    name, counter = stamp, 1
    while (Path(runs_dir) / name).exists():
        counter += 1
        name = f"{stamp}-{counter}"
    return name


def _train_config(
    *, name: str, runs_dir: str | Path, epochs: int, batch_size: int | None, options: dict[str, Any]
) -> Any:
    """The resolved config recorded in config.yaml (and checked): tfpilot's options for this run."""
    from pydantic import ValidationError

    from tfpilot.config.schema import RunConfig

    train = {
        "epochs": epochs,
        "batch_size": batch_size or 32,
        "clip_norm": None,
        "early_stopping": None,
        "strategy": "default",
        "steps_per_execution": 1,
        "jit_compile": "auto",
        # Weight histograms cost time every epoch; off unless asked.
        "histogram_every_epochs": 0,
        **options,
    }
    try:
        return RunConfig.model_validate(
            {"name": name, "runs_dir": str(runs_dir), "data": {"kind": "arrays"}, "train": train}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"] if part != "train") or "<root>"
        raise ConfigError(
            f"tfpilot.fit: `{key}` {first['msg'].removeprefix('Value error, ')} (got {first.get('input')!r})"
        ) from None


def _optimizer(value: Any) -> Any:
    """An optimizer as model.compile takes it, or tfpilot's {name: adam, learning_rate: ...} form."""
    if isinstance(value, dict) and "name" in value:
        config = {k: v for k, v in value.items() if k != "name"}
        try:
            return keras.optimizers.get({"class_name": value["name"], "config": config})
        except (ValueError, TypeError) as exc:
            raise ConfigError(
                f"tfpilot.fit: optimizer {value!r} is not a Keras optimizer ({first_line(exc)})"
            ) from None
    return value


def _compile_if_asked(model: keras.Model, given: dict[str, Any]) -> None:
    if "optimizer" in given:
        given = {**given, "optimizer": _optimizer(given["optimizer"])}
    if given:
        arguments = {"optimizer": getattr(model, "optimizer", None) or "rmsprop", **given}
        model.compile(**arguments)
    if not getattr(model, "compiled", False):
        raise ModelError(
            "tfpilot.fit: the model is not compiled; call model.compile(optimizer=..., loss=...) first (as model.fit "
            "needs) or pass optimizer= and loss= to tfpilot.fit"
        )


class _CheckedEarlyStopping(keras.callbacks.EarlyStopping):
    """Keras' EarlyStopping, except that a monitor that is never logged is an error after the first
    epoch (Keras only warns, and a typo would then train every epoch without stopping)."""

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if logs is not None and self.monitor not in logs:
            raise TrainError(
                f"tfpilot.fit: early_stopping monitor `{self.monitor}` is not logged; expected one of {sorted(logs)}",
                exit_code=2,
            )
        super().on_epoch_end(epoch, logs)


def _early_stopping(config: Any) -> keras.callbacks.EarlyStopping | None:
    stopping = config.train.early_stopping
    if stopping is None:
        return None
    return _CheckedEarlyStopping(
        monitor=stopping.monitor,
        patience=stopping.patience,
        min_delta=stopping.min_delta,
        mode=stopping.mode,
        restore_best_weights=stopping.restore_best,
    )


def _checkpoint(model: keras.Model, run: RunDir, *, max_to_keep: int) -> tuple[tf.train.CheckpointManager, tf.Variable]:
    epoch = tf.Variable(0, dtype=tf.int64, trainable=False, name="epoch")
    optimizers = model_optimizers(model)
    checkpoint = tf.train.Checkpoint(model=model, optimizers=optimizers, epoch=epoch)
    return tf.train.CheckpointManager(checkpoint, str(run.checkpoints), max_to_keep=max_to_keep), epoch


def _resume(
    model: keras.Model, run: RunDir, manager: tf.train.CheckpointManager, epoch: tf.Variable
) -> tuple[int, list[dict[str, Any]]]:
    import json

    if manager.latest_checkpoint is None:
        raise TrainError(
            f"resume=True but `{run.checkpoints}` holds no checkpoint; run without resume=True to start fresh",
            exit_code=2,
        )
    optimizer = getattr(model, "optimizer", None)
    strategy = model.distribute_strategy
    # A model built under a strategy makes its optimizer's slots (mirrored) and restores them in its scope.
    with contextlib.nullcontext() if is_default_strategy(strategy) else strategy.scope():
        if optimizer is not None and not optimizer.built and model.built:
            # Its slots must exist to be restored (other optimizers restore when they build).
            optimizer.build(model.trainable_variables)
        manager.checkpoint.restore(manager.latest_checkpoint)
    done = int(epoch.numpy())
    history = []
    if run.history_path.is_file():
        history = [row for row in json.loads(run.history_path.read_text()).get("epochs", []) if row["epoch"] < done]
    return done, history


def _trained_steps_counter(model: keras.Model, step: GuardedStep | None, before: int) -> Callable[[], int]:
    """Training steps run so far (history.json's `step`): the guard's count of steps that trained,
    after the `before` steps of resumed epochs. Not an optimizer's iterations, which a step may
    advance several times (WGAN-GP's critic: 3 updates a batch). Without the guard (under a TPU or
    parameter-server strategy) the optimizers' iterations are all there is."""
    if step is None:
        return lambda: applied_steps(model)
    return lambda: before + step.trained_steps()


def _features_of(batch: Any) -> Any:
    x, _, _ = keras.utils.unpack_x_y_sample_weight(batch)
    return x


def _validation_dataset(validation_data: Any, batch_size: int | None) -> tf.data.Dataset | None:
    """The validation batches as a tf.data.Dataset to keep for `tfpilot evaluate` (None when they
    come from a generator or PyDataset, which cannot be read twice)."""
    if validation_data is None:
        return None
    if isinstance(validation_data, tf.data.Dataset):
        return validation_data
    if isinstance(validation_data, tuple | list) and len(validation_data) in (2, 3):
        parts = tuple(part for part in validation_data if part is not None)
        try:
            return tf.data.Dataset.from_tensor_slices(parts).batch(batch_size or 32)
        except (ValueError, TypeError):
            return None
    return None


def _data_refusal(error: BaseException, x: Any, y: Any, sample_weight: Any) -> str:
    """One line for a model.fit that failed on the data: what TensorFlow said, at which op, and where
    in-memory data holds NaN/Inf. A NaN in a float column of ids becomes -2147483648 when the model
    casts it for an Embedding, so the step fails at the lookup, before any guard can see a NaN."""
    line = f"tfpilot.fit: model.fit refused the data or model: {op_error_line(error)}"
    arrays = [part for part in (x, y, sample_weight) if part is not None]
    leaves = tf.nest.flatten(arrays)
    if not isinstance(error, tf.errors.OpError) or not leaves or not all(isinstance(v, np.ndarray) for v in leaves):
        return line
    where = nonfinite_inputs((x, y, sample_weight))
    if where is None:
        return line
    return (
        f"{line}; the data holds NaN/Inf in {where['input']} (rows {where['input_rows']}): a NaN that reaches an "
        "integer op (an Embedding's index, a cast) fails there; clean or drop those rows"
    )


def _guard_runs_under(strategy: tf.distribute.Strategy) -> bool:
    tested = (
        tf.distribute.MirroredStrategy,
        tf.distribute.OneDeviceStrategy,
        tf.distribute.MultiWorkerMirroredStrategy,
    )
    return is_default_strategy(strategy) or isinstance(strategy, tested)


def fit(
    model: keras.Model,
    x: Any = None,
    y: Any = None,
    # model.fit's arguments in model.fit's order, so a positional call reads the same
    batch_size: int | None = None,
    epochs: int = 1,
    verbose: Any = 0,
    callbacks: list[keras.callbacks.Callback] | None = None,
    validation_split: float = 0.0,
    validation_data: Any = None,
    shuffle: bool = True,
    class_weight: dict[int, float] | None = None,
    sample_weight: Any = None,
    initial_epoch: int = 0,
    steps_per_epoch: int | None = None,
    validation_steps: int | None = None,
    validation_batch_size: int | None = None,
    validation_freq: int = 1,
    *,
    name: str | None = None,
    runs_dir: str | Path = "runs",
    resume: bool = False,
    save_validation_data: bool = True,
    checkpoint_every_secs: float = 30.0,
    **options: Any,
) -> FitResult:
    """Train a keras.Model of your own exactly as `model.fit(x, y, ...)` would, with tfpilot's NaN
    guard and run directory around it; returns a FitResult (`.keras_history` is Keras' History).

    Every argument model.fit takes means the same here. `x` may also be a tuple (x, y) or
    (x, y, sample_weight) of arrays (as tfpilot.fit took before). model.compile's arguments
    (optimizer, loss, loss_weights, metrics, weighted_metrics) compile the model first. tfpilot's
    options: nan_policy (stop | skip_batch), nan_max_retries, early_stopping ({monitor, patience,
    ...}), clip_norm (the optimizer's global_clipnorm), steps_per_execution and jit_compile (set on
    the model for this run), seed, deterministic, max_checkpoints, overfit_patience,
    histogram_every_epochs. The run directory `runs_dir/name` gets config.yaml, history.json,
    TensorBoard logs, checkpoints, metrics.json, findings.json and fit/. An epoch's end writes a
    checkpoint when `checkpoint_every_secs` (30) have passed since the last one, and the end of
    training always does (0: every epoch); `resume=True` continues from the latest. Without `name` (a model.fit call changed to tfpilot.fit) the
    run is `<model name>-<date>-<time>`, a new directory each call, logged (logger `tfpilot.fit`) and in the result's `run.root`.
    """
    from tfpilot.atomic import atomic_write_json
    from tfpilot.config import dump_config

    if not isinstance(model, keras.Model):
        raise ModelError(f"tfpilot.fit: `model` must be a keras.Model, got {type(model).__name__}")
    if (
        isinstance(checkpoint_every_secs, bool)
        or not isinstance(checkpoint_every_secs, int | float)
        or not (checkpoint_every_secs >= 0)
    ):
        raise ConfigError(
            f"tfpilot.fit: checkpoint_every_secs must be a number of seconds >= 0, got {checkpoint_every_secs!r}; "
            "0 checkpoints every epoch"
        )
    given = {key: options.pop(key) for key in _COMPILE_ARGUMENTS if key in options}
    for key in options:
        if key in _REFUSED:
            raise ConfigError(f"tfpilot.fit: `{key}` is not a tfpilot.fit option; {_REFUSED[key]}")
        if key not in _OPTIONS:
            raise ConfigError(
                f"tfpilot.fit: unknown option `{key}`; expected model.fit's arguments, model.compile's (loss, metrics, "
                f"...) or one of {sorted(_OPTIONS)}"
            )
    memo: list[Any] = []
    if inspect.isgenerator(x):
        x = _remembering(x, memo)
    if (
        y is None
        and sample_weight is None
        and isinstance(x, tuple)
        and len(x) in (2, 3)
        and not isinstance(x, tf.data.Dataset)
    ):
        x, y, sample_weight = (*x, None)[:3]
    if isinstance(x, tf.data.Dataset) and int(x.cardinality()) == tf.data.INFINITE_CARDINALITY and not steps_per_epoch:
        # model.fit would run its first epoch forever.
        raise DataError("tfpilot.fit: the dataset repeats forever; pass steps_per_epoch=N (or take(N) batches of it)")
    if name is None:
        if resume:
            raise ConfigError("tfpilot.fit: resume=True needs the run's name=...; pass the name of the run to continue")
        name = _fresh_run_name(model, runs_dir)
        logger.info("tfpilot.fit: run directory %s (pass name=... to choose it)", Path(runs_dir) / name)
    config = _train_config(name=name, runs_dir=runs_dir, epochs=epochs, batch_size=batch_size, options=options)
    train = config.train
    if train.nan_policy.value == "rollback":
        raise ConfigError(
            "tfpilot.fit: nan_policy=rollback is for `tfpilot train`; tfpilot.fit skips the bad batch (skip_batch) with "
            "every variable as before it, or stops (stop)"
        )
    if "seed" in options:
        keras.utils.set_random_seed(train.seed)
    if train.deterministic:
        tf.config.experimental.enable_op_determinism()
    _compile_if_asked(model, given)
    findings: list[Finding] = []
    if train.clip_norm:
        for optimizer in model_optimizers(model):
            optimizer.global_clipnorm = train.clip_norm
    if overrides_train_step(model):
        findings.append(
            Finding(
                code="FIT-OWN-TRAIN-STEP",
                severity=Severity.INFO,
                title="The model's own train_step runs",
                message=f"{type(model).__name__} overrides train_step, and tfpilot.fit runs it as model.fit does; the NaN "
                "guard wraps it (each optimizer update is refused on non-finite gradients), but tfpilot cannot "
                "log the gradient norm inside it",
                location=type(model).__qualname__,
                evidence={"clip_norm": train.clip_norm},
                fix="log gradient norms in your train_step if you need them; clip_norm= sets each optimizer's "
                "global_clipnorm, which applies inside your step too",
            )
        )
    saved_settings = {"steps_per_execution": model.steps_per_execution, "jit_compile": model.jit_compile}
    if "steps_per_execution" in options:
        model.steps_per_execution = int(train.steps_per_execution)
    if "jit_compile" in options:
        model.jit_compile = train.jit_compile.value in ("true", "stacked")

    run = RunDir.at(config.run_path)
    run.root.mkdir(parents=True, exist_ok=True)
    if not resume:
        # A fresh run starts fresh: no findings, curves or checkpoints of an earlier run of this name.
        run.findings_path.unlink(missing_ok=True)
        shutil.rmtree(run.logs, ignore_errors=True)
        shutil.rmtree(run.checkpoints, ignore_errors=True)
    dump_config(config, run.config_path)
    run.fit_dir.mkdir(exist_ok=True)  # marks a tfpilot.fit run (RunDir.is_fit_run) from the start

    guard = NanGuard(policy=train.nan_policy.value, max_retries=train.nan_max_retries, location=str(run.root))
    step = GuardedStep(model, policy=train.nan_policy.value, max_retries=train.nan_max_retries)
    # Keras builds its compiled multi-step function from model.train_step; the guarded step takes
    # its place for this call only (the model's own step runs inside it, unchanged).
    original_train_step = model.__dict__.get("train_step")
    own_step = model.train_step
    # The guard runs under the strategies it is tested with (guarded_step.py: per-replica state, one
    # verdict for all replicas, the update's cond in the cross-replica context); not on TPUs or with
    # parameter servers, whose replica contexts it was never run in.
    guarded = _guard_runs_under(model.distribute_strategy)
    traced_spec: list[Any] = []

    def recorded(inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def train_step(data: Any) -> Any:
            # The types the step receives (after Keras' adapters cast them) type the serving inputs,
            # and a dimension that differs between traces (per-batch padding) is None there; specs,
            # not the traced tensors, which would keep the trace's graph alive.
            traced_spec.append(tf.nest.map_structure(lambda t: None if t is None else tf.type_spec_from_value(t), data))
            return inner(data)

        return train_step

    if guarded:
        # The bad batch is kept for the replay on one device only: a replica's batch is a part of it.
        model.train_step = recorded(step.wrap(own_step, keep_batch=not (model.jit_compile or step.distributed)))
    else:
        model.train_step = recorded(own_step)
        findings.append(
            Finding(
                code="FIT-GUARD-OFF",
                severity=Severity.WARNING,
                title="NaN guard off under this distribution strategy",
                message=f"the model trains under {type(model.distribute_strategy).__name__}; tfpilot.fit's NaN guard "
                "runs on one device and under Mirrored, OneDevice and MultiWorkerMirrored strategies only, so a "
                "non-finite batch is not skipped here",
                location=str(run.root),
                evidence={"strategy": type(model.distribute_strategy).__name__},
                fix="add keras.callbacks.TerminateOnNaN() to stop at the first NaN loss, or train on one device",
            )
        )
    history_rows: list[dict[str, Any]] = []
    manager, epoch_variable = _checkpoint(model, run, max_to_keep=train.max_checkpoints)
    keras_history = None
    trained_steps = _trained_steps_counter(model, step if guarded else None, 0)
    try:
        if resume:
            # the checkpoint's epoch, not the argument: resuming continues where the run stopped
            initial_epoch, history_rows = _resume(model, run, manager, epoch_variable)
        steps_before = int(history_rows[-1].get("step", 0)) if history_rows else 0
        trained_steps = _trained_steps_counter(model, step if guarded else None, steps_before)
        run_callbacks = [
            *(
                [GuardCallback(step=step, guard=guard, train_step=own_step, trained_steps=trained_steps)]
                if guarded
                else []
            ),
            RunDirCallback(
                run=run,
                manager=manager,
                epoch=epoch_variable,
                history=history_rows,
                histogram_every_epochs=train.histogram_every_epochs,
                trained_steps=trained_steps,
                checkpoint_every_secs=checkpoint_every_secs,
            ),
        ]
        stopping = _early_stopping(config)
        user_callbacks = list(callbacks or [])
        all_callbacks = [*run_callbacks[:-1], *user_callbacks, *([stopping] if stopping else []), run_callbacks[-1]]
        if guarded:
            step.install()
        model.train_function = None  # rebuilt from the guarded step
        if guarded and model.steps_per_execution > 1 and not model.run_eagerly and not step.distributed:
            # Several steps a call: the guard checks once per call (deferred_loop.py), with
            # Keras' own function of the per-step guarded step where it cannot.
            model.make_train_function()
            model.train_function = DeferredLoop(model, step, recorded(step.check_step(own_step)), model.train_function)
        try:
            keras_history = model.fit(
                x,
                y,
                batch_size=batch_size,
                epochs=epochs,
                verbose=verbose,
                callbacks=all_callbacks,
                validation_split=validation_split,
                validation_data=validation_data,
                shuffle=shuffle,
                class_weight=class_weight,
                sample_weight=sample_weight,
                initial_epoch=initial_epoch,
                steps_per_epoch=steps_per_epoch,
                validation_steps=validation_steps,
                validation_batch_size=validation_batch_size,
                validation_freq=validation_freq,
            )
        except TfpilotError:
            write_findings(run.findings_path, guard.findings, append=True)
            raise
        except (ValueError, TypeError, tf.errors.InvalidArgumentError) as exc:
            raise DataError(_data_refusal(exc, x, y, sample_weight)) from exc
    finally:
        step.uninstall()
        if original_train_step is None:
            model.__dict__.pop("train_step", None)
        else:
            model.train_step = original_train_step
        model.train_function = None  # the next model.fit builds Keras' own again
        model.steps_per_execution = saved_settings["steps_per_execution"]
        model.jit_compile = saved_settings["jit_compile"]

    findings.extend(guard.summary_findings())
    findings.extend(overfitting_findings(history_rows, patience=train.overfit_patience, location=str(run.history_path)))
    # tfpilot's early stopping or the user's own EarlyStopping callback.
    stopped_early = any(
        isinstance(callback, keras.callbacks.EarlyStopping) and callback.stopped_epoch > 0
        for callback in [*(callbacks or []), *([stopping] if stopping is not None else [])]
    )
    metrics: dict[str, Any] = {
        "train": {
            k: v
            for k, v in (history_rows[-1] if history_rows else {}).items()
            if not k.startswith("val_") and k not in ("epoch", "step")
        }
    }
    if history_rows and any(k.startswith("val_") for k in history_rows[-1]):
        metrics["validation"] = {k[4:]: v for k, v in history_rows[-1].items() if k.startswith("val_")}
    atomic_write_json(run.metrics_path, metrics)
    # What tfpilot does with the trained model from here (save and reload it, sample and verify the serving
    # rows) leaves the process as model.fit leaves it: the random state (NumPy's and Python's, which ops that
    # draw their seed when traced consume, and the layers' seed generators) and the layers' states.
    with host_state_kept(model):
        saved = save_model(model, run)
        if saved is not None:
            findings.append(saved)
        held_out = validation_data
        if held_out is None and validation_split and not isinstance(x, tf.data.Dataset):
            try:
                held_out = validation_split_of((x, y, sample_weight), validation_split)
            except (ValueError, TypeError):
                held_out = None  # Keras refused the split itself; fit raised already
        kept_validation = _validation_dataset(held_out, validation_batch_size or batch_size)
        if kept_validation is not None and validation_steps:
            # fit validated on `validation_steps` batches; a repeated dataset has no end to save up to
            kept_validation = kept_validation.take(validation_steps)
        validation_kept = False
        if kept_validation is not None and save_validation_data:
            validation = kept_validation

            def keep_validation() -> bool:
                save_validation(run, validation)
                return True

            validation_kept = bool(
                _after_training(
                    "fit/validation/ (the validation batches `tfpilot evaluate` reads)", run, findings, keep_validation
                )
            )
        elif run.fit_validation_path.exists():
            shutil.rmtree(run.fit_validation_path)
        features = None
        if defines_call(model):
            features, fixed_batch = _after_training(
                "the sample rows that type and verify the serving signature",
                run,
                findings,
                lambda: _sample_features(model, traced_spec, x, memo, batch_size=batch_size),
            ) or (None, None)
            if fixed_batch is not None:
                findings.append(fixed_batch)
        else:
            findings.append(_no_forward_pass(model, run))
        if features is not None:

            def write_serving_files() -> bool:
                save_sample(run, model=model, features=features)
                write_spec(
                    run,
                    model=model,
                    features=features,
                    shapes=_serving_shapes(model, features, traced_spec),
                    has_validation=validation_kept,
                    batch_size=batch_size,
                )
                return True

            if not _after_training("fit/spec.json and fit/sample_features.npz", run, findings, write_serving_files):
                features = None
        shutil.rmtree(run.fit_saved_model_path, ignore_errors=True)
        if saved is not None and features is not None:
            findings.remove(saved)
            findings.append(_serve_live_model(model, run, saved))
    write_findings(run.findings_path, findings, append=True)
    return FitResult(
        history=history_rows,
        findings=findings,
        stopped_early=stopped_early,
        epochs_run=len(history_rows),
        global_step=trained_steps(),
        keras_history=keras_history,
        run=run,
    )


def _serving_dtypes(model: keras.Model, features: Any) -> Any:
    """The dtypes the model computes its inputs in, which the serving signature takes.

    A model with declared Inputs (functional, Sequential) converts each input to its Input's dtype
    before its first layer (Functional._convert_inputs_to_tensors), so int32 CSV columns fed to a
    float32 Input are float32 to the model, and `model.export()` serves the Input's dtype too; a
    signature of the data's int32 would refuse the 108.0 a JSON client sends. Elsewhere float64
    features serve as the float type the model computes in (Keras' adapters cast float64 arrays)."""
    declared = _declared_input_dtypes(model, features)
    if declared is not None:
        features = tf.nest.map_structure(
            lambda t, dtype: tf.cast(t, dtype) if dtype is not None and dtype != t.dtype else t, features, declared
        )
    policy = getattr(model, "dtype_policy", None)
    target = "float64" if getattr(policy, "variable_dtype", "float32") == "float64" else "float32"
    return tf.nest.map_structure(lambda t: tf.cast(t, target) if t.dtype == tf.float64 else t, features)


def _numeric(dtype: tf.DType) -> bool:
    return dtype.is_integer or dtype.is_floating


def _serving_shapes(model: keras.Model, features: Any, traced: list[Any]) -> list[list[int | None]]:
    """Per feature leaf (tf.nest.flatten order), the serving shape. The model's Input, where it
    declares one, decides (None where it declares None: a text model trained on length-24 batches
    serves length 30; fixed where it is fixed, whatever the dataset's static shape says). Without
    Inputs (a subclassed model), a dimension is None where it differed between the step's traces or
    the data left it unknown (a dataset padded per batch), else the sample's."""
    leaves = tf.nest.flatten(features)
    declared = _declared_inputs(model, features)
    declared_flat = tf.nest.flatten(declared) if declared is not None else [None] * len(leaves)
    seen: list[list[Any]] = []
    for spec in traced:
        flat = tf.nest.flatten(_features_of(spec))
        if len(flat) == len(leaves):
            seen.append([s.shape.as_list() if s is not None and s.shape.rank is not None else None for s in flat])
    shapes = []
    for index, leaf in enumerate(leaves):
        merged: list[int | None] = list(leaf.shape.as_list())
        tensor = declared_flat[index]
        if tensor is not None and len(tensor.shape) == len(merged):
            merged = list(tensor.shape)
        else:
            for other in (row[index] for row in seen):
                if other is not None and len(other) == len(merged):
                    merged = [
                        None if theirs is None or theirs != ours else ours
                        for ours, theirs in zip(merged, other, strict=True)
                    ]
        shapes.append([None, *merged[1:]] if merged else merged)
    return shapes


def _model_inputs(model: keras.Model) -> list[Any]:
    """The model's Input tensors, flat; empty for a model without symbolic inputs (subclassed)."""
    try:
        return list(tf.nest.flatten(getattr(model, "inputs", None) or []))
    except (AttributeError, ValueError):  # subclassed models have no symbolic inputs
        return []


def _first_call_specs(model: keras.Model) -> list[tf.TensorSpec]:
    """For a model without Inputs (subclassed): one spec per array its first call received, in the
    model's compute dtype (Keras records the shapes it was built from, not dtypes); empty when it
    recorded none or a structure other than one array or a list of arrays."""
    shapes = first_call_shapes(model)
    if shapes is None:
        return []
    leaves = [shapes] if _is_shape(shapes) else list(shapes) if isinstance(shapes, list | tuple) else []
    if not leaves or not all(_is_shape(leaf) and len(leaf) >= 1 for leaf in leaves):
        return []
    return [tf.TensorSpec([None, *leaf[1:]], tf.as_dtype(model.compute_dtype)) for leaf in leaves]


def _is_shape(value: Any) -> bool:
    """(32, 5, 24) or [None, 11]: one shape, not a structure of shapes."""
    return isinstance(value, list | tuple) and all(d is None or isinstance(d, int) for d in value)


def _declared_inputs(model: keras.Model, features: Any) -> Any | None:
    """The model's Input tensors in the features' structure; None when the model declares no
    Inputs (a subclassed model) or the features cannot be matched to them."""
    inputs = _model_inputs(model)
    if not inputs:
        return None
    if isinstance(features, dict):
        by_name = {getattr(tensor, "name", None): tensor for tensor in inputs}
        if not all(key in by_name for key in features):
            return None
        return type(features)((key, by_name[key]) for key in features)  # an OrderedDict stays one
    if len(tf.nest.flatten(features)) != len(inputs):
        return None
    return tf.nest.pack_sequence_as(features, inputs)


def _declared_input_dtypes(model: keras.Model, features: Any) -> Any | None:
    """Per feature (the features' structure), the dtype of the model Input it feeds where that is
    a number type and the feature is one too (None elsewhere); None when the model declares no
    Inputs (a subclassed model) or the features cannot be matched to them."""
    matched = _declared_inputs(model, features)
    if matched is None:
        return None

    def dtype_of(feature: Any, tensor: Any) -> tf.DType | None:
        try:
            declared = tf.as_dtype(tensor.dtype)
        except TypeError:
            return None
        # bool too: Keras converts a bool array fed to a float Input (one-hot characters) as any number
        fed = tf.as_dtype(feature.dtype)
        return declared if _numeric(declared) and (_numeric(fed) or fed == tf.bool) else None

    return tf.nest.map_structure(dtype_of, features, matched)


def _no_forward_pass(model: keras.Model, run: RunDir) -> Finding:
    """A model trained through its own train_step that defines no call(): there is no forward
    pass to serve, but its sub-models have one."""
    parts = [name for name, value in vars(model).items() if isinstance(value, keras.Model) and not name.startswith("_")]
    shown = ", ".join(f"`model.{name}`" for name in parts) or "the sub-model that does inference"
    return Finding(
        code="FIT-NOTHING-TO-SERVE",
        severity=Severity.INFO,
        title="The model has no forward pass to serve",
        message=f"`{type(model).__name__}` trains through its own train_step and defines no call(), so there is "
        "no serving signature to write; its weights are in checkpoints/",
        location=str(run.root),
        evidence={"sub_models": parts},
        fix=f"serve a sub-model: tfpilot.fit or model.export() on {shown}",
    )


def _after_training(what: str, run: RunDir, findings: list[Finding], write: Callable[[], Any]) -> Any:
    """`write()`, or None with a finding when it fails: training succeeded and its weights are in
    checkpoints/, so a file written after it (for `tfpilot evaluate` / `export`) that cannot be
    written is reported, never raised; the run and its history come back."""
    try:
        return write()
    except Exception as exc:  # noqa: BLE001 - see the docstring: never lose a trained run to an extra file
        findings.append(
            Finding(
                code="FIT-ARTIFACT-NOT-WRITTEN",
                severity=Severity.WARNING,
                title="A file for evaluate/export was not written after training",
                message=f"{what} could not be written after training ({type(exc).__name__}: {first_line(exc)}); "
                "the trained weights are in checkpoints/ and the history in history.json",
                location=str(run.root),
                evidence={"artifact": what, "error": first_line(exc)},
                fix="fix the cause above and train again, or export the model yourself with model.export()",
            )
        )
        return None


def _serve_live_model(model: keras.Model, run: RunDir, not_saved: Finding) -> Finding:
    """Keras cannot load this model again (it cannot rebuild it from its config), but the trained
    model is here: write its serving SavedModel now, so `tfpilot export` still works later.
    Returns the not-saved finding, saying which of the two happened."""

    from tfpilot.export.fit_model import write_verified
    from tfpilot.train.fit.artifacts import read_fit_spec

    spec = read_fit_spec(run)
    with np.load(run.fit_sample_path, allow_pickle=False) as stored:
        sample = {i["key"]: stored[i["key"]] for i in spec["inputs"]}
    try:
        # write_verified puts a stateful model's state back after each of its own calls
        verified = write_verified(model, spec, sample, run.fit_saved_model_path)
    except Exception as exc:  # noqa: BLE001 - training succeeded; a failed extra artifact is a finding, never a lost run
        why = str(exc) if isinstance(exc, TfpilotError) else first_line(exc)
        return dataclasses.replace(
            not_saved,
            message=f"{not_saved.message}; a SavedModel written from the trained model did not verify either ({why})",
        )
    return dataclasses.replace(
        not_saved,
        severity=Severity.INFO,
        message=not_saved.message.replace(
            "`tfpilot evaluate/export` cannot use this run (its weights are in checkpoints/)",
            "`tfpilot evaluate` cannot use this run; `tfpilot export` uses the SavedModel written from the trained "
            f"model instead ({run.fit_saved_model_path.relative_to(run.root)}, verified with both loaders"
            + (
                f"; outputs {', '.join(f'`{name}`' for name in verified.sampled)} sample at inference (two calls of "
                "the trained model differ), so they are served as model.predict computes them and checked for shape "
                "and dtype only"
                if verified.sampled
                else ""
            )
            + ")",
        ),
    )


def _remembering(generator: Any, memo: list[Any]) -> Any:
    """The same generator, remembering its first element (a generator can be read only once)."""
    for item in generator:
        if not memo:
            memo.append(item)
        yield item


_SAMPLE_BATCHES = 4
_SAMPLE_ROWS = 8


def _length(sequence: Any) -> int:
    try:
        return len(sequence)
    except TypeError:
        return 1


def _sample_features(
    model: keras.Model, traced: list[Any], x: Any, memo: list[Any], *, batch_size: int | None
) -> tuple[Any, Finding | None]:
    """A few real feature rows, typed as the step received them: from the first element of the
    data (tf.data, PyDataset, a generator's remembered first batch) or the first rows of arrays.

    A model that computes only on batches of one size (a reshape to a constant batch, a stateful
    RNN) fails on a few rows; it took whole training batches in training, so the sample is then one
    whole batch, with a finding that its served model answers requests of that many rows only."""
    if not traced:
        return None, None
    structure = _features_of(traced[0])
    arrays = False
    if isinstance(x, tf.data.Dataset):
        # a few batches: the first may hold the very NaN row the guard skipped
        candidates = list(x.take(_SAMPLE_BATCHES))
    elif isinstance(x, keras.utils.PyDataset):
        candidates = [x[index] for index in range(min(_SAMPLE_BATCHES, _length(x)))]
    elif memo:
        candidates = [memo[0]]
    elif x is not None and not callable(getattr(x, "__next__", None)):
        candidates = [(x,)]
        arrays = True
    else:
        return None, None
    batches = [_features_of(batch) for batch in candidates]
    features = _typed_rows(model, batches, structure, count=_SAMPLE_ROWS)
    if features is None:
        return None, None
    refusal = _refusal(model, features)
    if refusal is None:
        return features, None
    # arrays are batched by fit (batch_size, default 32); other data arrives in its own batches
    whole = (batch_size or 32) if arrays else (leading_rows(batches[0]) or 0)
    if whole != _SAMPLE_ROWS and whole > 0:  # a stateful RNN's batch of 1 too
        rows = _typed_rows(model, batches, structure, count=whole)
        if rows is not None and leading_rows(rows) == whole and _refusal(model, rows) is None:
            return rows, _fixed_batch_finding(model, whole, refusal)
    if overrides_train_step(model):
        # Its own train_step reads the batches its own way (anchors and positives from one stacked
        # tensor, a GAN's dict of images and labels): they are not the model's input. Serve what the
        # model declares, or, where its call never ran in training (a GAN's call delegating to its
        # generator), the Inputs of the first of its functional sub-models that its call computes on.
        for declared in _declared_candidates(model):
            probe = probe_rows(declared, count=_SAMPLE_ROWS)
            if probe is not None and _refusal(model, probe) is None:
                return probe, _probe_finding(model, refusal)
    return features, None


def _declared_candidates(model: keras.Model) -> list[list[Any]]:
    """What the model's call may take, most certain first: its own Inputs or first call, then each
    functional sub-model's Inputs in the order the model tracks them."""
    own = _model_inputs(model) or _first_call_specs(model)
    candidates = [own] if own else []
    for layer in getattr(model, "layers", []):
        if isinstance(layer, keras.Model) and (inputs := _model_inputs(layer)):
            candidates.append(inputs)
    return candidates


def _probe_finding(model: keras.Model, refusal: str) -> Finding:
    return Finding(
        code="FIT-GENERATED-SAMPLE",
        severity=Severity.INFO,
        title="The training batches are not the model's input: the export is checked on generated rows",
        message=f"`{type(model).__name__}` trains through its own train_step on batches it reads its own way "
        f"(the model refused them: {refusal}); the serving signature follows the Inputs its call takes (its own, "
        "or those of the sub-model it calls on them, where the call never ran in training), and "
        f"fit/sample_features.npz holds {_SAMPLE_ROWS} generated rows (a seeded normal draw, not training data) "
        "that `tfpilot export` uses only to compare the exported model with the trained one",
        location=type(model).__name__,
        evidence={"error": refusal, "rows": _SAMPLE_ROWS},
        fix="nothing to do; to check the export on real inputs, call the exported model on rows of your own",
    )


def _typed_rows(model: keras.Model, batches: list[Any], structure: Any, *, count: int) -> Any:
    rows = finite_rows(batches, count=count)
    if rows is None:
        return None
    # Cast as Keras' adapters cast (float64 numpy to the model's float type), to the traced dtypes.
    typed = tf.nest.map_structure(
        lambda value, spec: tf.cast(tf.convert_to_tensor(value), spec.dtype) if spec is not None else value,
        rows,
        structure,
        check_types=False,
    )
    return _serving_dtypes(model, typed)


def _refusal(model: keras.Model, features: Any) -> str | None:
    """None when the model computes on these rows in inference mode, else the error's first line."""
    try:
        with states_kept(model):
            model(features, training=False)
    except (tf.errors.OpError, ValueError, TypeError) as exc:
        return first_line(exc)
    return None


def _fixed_batch_finding(model: keras.Model, rows: int, refusal: str) -> Finding:
    return Finding(
        code="FIT-FIXED-BATCH",
        severity=Severity.INFO,
        title="The model computes only on batches of one size",
        message=f"`{type(model).__name__}` failed on {_SAMPLE_ROWS} rows ({refusal}) and computes on {rows}, the "
        f"batch size it trained on: its served model answers requests of {rows} rows",
        location=type(model).__name__,
        evidence={"rows": rows, "error": refusal},
        fix="compute the batch size from the input (keras.ops.shape(x)[0]) instead of a constant, so any "
        "number of rows can be served",
    )
