"""Bring your own model and data: `tfpilot.fit(model, data)`.

A keras.Model of the user's own and a tf.data.Dataset of `(x, y)` or `(x, y, sample_weight)`
batches (or numpy arrays) train in tfpilot's loop (compiled multi-step calls, NaN guard,
TensorBoard, checkpoints and resume, findings) and leave a run directory that `tfpilot evaluate`
and `tfpilot export` read afterwards.

The loss and the metrics are the model's own, as `model.compile` took them, and are computed by
Keras' own compile containers (CompileLoss, CompileMetrics): they resolve `"accuracy"` by the
output's shape, per-output losses, loss weights and metrics keyed by output name or listed in
output order, and name what they log as `model.fit` does (`loss`, `cls_loss`, `cls_auc`, with
`val_` for validation). Reimplementing those rules would drift from Keras; they are private
(keras.src), so the import is guarded and its failure is one line.

Labels travel through the step as `{"y": y, "sample_weight": w}`: the step and the sharding code
hand labels through as one structure, so sample weights need no second path there.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tfpilot.errors import ConfigError, DataError, ModelError, TfpilotError
from tfpilot.findings import Finding, Severity, write_findings
from tfpilot.rundir import RunDir
from tfpilot.train.heads import Head
from tfpilot.train.step import metric_results

__all__ = [
    "fit",
    "CompiledHead",
    "DatasetSource",
    "FIT_SPEC_KIND",
    "signature_inputs",
    "load_fit_model",
    "read_fit_spec",
    "evaluate_fit_run",
]

FIT_SPEC_KIND = "tfpilot.fit"
# Keys of **train_options that are model.compile's arguments rather than train config fields.
_COMPILE_ARGUMENTS = ("loss", "loss_weights", "metrics", "weighted_metrics")
# train config fields that describe tfpilot's own task heads and have no meaning for a compiled loss.
_NOT_FOR_FIT = {
    "class_weight": "give each example its weight as the third element of the data, (x, y, sample_weight)",
    "label_smoothing": "pass it to the loss, e.g. keras.losses.BinaryCrossentropy(label_smoothing=0.1)",
    "mixed_precision": "build the model after keras.mixed_precision.set_dtype_policy('mixed_float16'); "
    "model.compile then adds loss scaling",
}
# Where tfpilot.fit's defaults differ from `tfpilot train`'s: what model.fit does by default.
_FIT_DEFAULTS: dict[str, Any] = {"batch_size": 32, "clip_norm": None, "early_stopping": None}


def _compile_utils() -> Any:
    try:
        from keras.src.trainers import compile_utils
    except ImportError as exc:  # pragma: no cover - depends on the installed Keras
        raise ModelError(
            f"tfpilot.fit needs Keras 3's compile containers (keras.src.trainers.compile_utils), which this "
            f"Keras {keras.__version__} lacks ({exc}); install keras>=3.10,<4"
        ) from None
    return compile_utils


def _unscale_for_distribution(value: tf.Tensor) -> tf.Tensor:
    from keras.src.losses.loss import unscale_loss_for_distribution

    return unscale_loss_for_distribution(value)


def _first_line(error: BaseException) -> str:
    # Keras leads with "Exception encountered when calling X.call()." and says what went wrong after it.
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Exception encountered", "Arguments received"))]
    return (useful or lines or [type(error).__name__])[0]


def _looks_unbatched(model: keras.Model, features_spec: Any) -> bool:
    """Features one rank short of the model's inputs: the dataset was never batched."""
    inputs = [getattr(t, "shape", None) for t in tf.nest.flatten(getattr(model, "inputs", None) or [])]
    leaves = tf.nest.flatten(features_spec)
    if not inputs or len(inputs) != len(leaves):
        return False
    return any(
        shape is not None and spec.shape.rank is not None and spec.shape.rank == len(shape) - 1
        for shape, spec in zip(inputs, leaves, strict=True)
    )


# ---------------------------------------------------------------------------------------- head


class OutputLosses:
    """The unweighted loss of each output (`cls_loss`, `reg_loss`), as Keras logs them for a model
    with several losses: a CompileLoss whose own Mean trackers are the metrics."""

    name = "output_losses"

    def __init__(self, loss: Any) -> None:
        self.loss = loss

    @property
    def variables(self) -> list[Any]:
        return list(self.loss.variables)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        self.loss(y_true, y_pred, sample_weight)

    def reset_state(self) -> None:
        for tracker in self.loss.metrics:
            tracker.reset_state()

    def result(self) -> dict[str, tf.Tensor]:
        return {tracker.name: tracker.result() for tracker in self.loss.metrics}


def _unpack(labels: Any) -> tuple[Any, Any]:
    return labels["y"], labels.get("sample_weight")


class CompiledHead(Head):
    """The loss and metrics of `model.compile` as a tfpilot head.

    `sample` is one batch (y_true, y_pred, sample_weight) computed eagerly: Keras' containers
    decide what `"accuracy"` means and create their variables when they are built, which must
    happen outside any compiled step (and inside the strategy scope: make_metrics runs there).
    """

    task = "keras"
    output_units = 0

    def __init__(
        self,
        *,
        loss: Any,
        loss_weights: Any = None,
        metrics: Any = None,
        weighted_metrics: Any = None,
        output_names: list[str] | None,
        sample: tuple[Any, Any, Any],
    ) -> None:
        self.loss = loss
        self.loss_weights = loss_weights
        self.metrics = metrics
        self.weighted_metrics = weighted_metrics
        self.output_names = output_names
        self.sample = sample
        self._objective: Any = None

    def _new_loss(self) -> Any:
        compile_loss = _compile_utils().CompileLoss(self.loss, self.loss_weights, output_names=self.output_names)
        y_true, y_pred, sample_weight = self.sample
        try:
            # Builds it (the per-output trackers are variables) and proves the labels fit the outputs.
            compile_loss(y_true, y_pred, sample_weight)
        except (KeyError, ValueError, TypeError) as exc:
            raise DataError(
                f"tfpilot.fit: the loss {self.loss!r} does not fit the model's outputs {self.output_names} and the "
                f"data's labels ({_first_line(exc)}); key the labels (and a dict loss) by the output names"
            ) from None
        return compile_loss

    def _built_objective(self) -> Any:
        if self._objective is None:
            self._objective = self._new_loss()
        return self._objective

    def per_example_loss(self, labels: Any, outputs: Any) -> tf.Tensor:
        y_true, sample_weight = _unpack(labels)
        # Keras' reduced loss (weighted outputs, sample weights, the loss's own reduction), given
        # to each row of the batch: the step's mean over rows and its Mean tracker then equal
        # Keras' loss and its batch-size-weighted `loss` log. Keras divides by the replica count
        # inside the loss; tfpilot weighs each replica's slice by its rows instead.
        value = _unscale_for_distribution(self._built_objective()(y_true, outputs, sample_weight))
        rows = tf.shape(tf.nest.flatten(outputs)[0])[0]
        return tf.fill([rows], tf.cast(value, tf.float32))

    def make_metrics(self) -> list[Any]:
        self._built_objective()
        made: list[Any] = []
        per_output = OutputLosses(self._new_loss())
        if per_output.loss.metrics:
            per_output.reset_state()  # building ran one update
            made.append(per_output)
        if self.metrics is not None or self.weighted_metrics is not None:
            compile_metrics = _compile_utils().CompileMetrics(
                self.metrics, self.weighted_metrics, output_names=self.output_names
            )
            y_true, y_pred, _ = self.sample
            try:
                compile_metrics.build(y_true, y_pred)
            except (KeyError, ValueError, TypeError) as exc:
                raise DataError(
                    f"tfpilot.fit: the metrics {self.metrics!r} do not fit the model's outputs {self.output_names} "
                    f"({_first_line(exc)}); key them by output name or list one entry per output"
                ) from None
            made.append(compile_metrics)
        return made

    def update_metrics(self, metrics: list[Any], labels: Any, outputs: Any) -> None:
        y_true, sample_weight = _unpack(labels)
        for metric in metrics:
            metric.update_state(y_true, outputs, sample_weight)

    def metric_names(self) -> list[str]:
        """Every name this head logs (besides `loss`), in Keras' order."""
        return list(metric_results(self.make_metrics()))

    def evaluate_arrays(self, labels: Any, outputs: Any) -> dict[str, float]:
        metrics = self.make_metrics()
        self.update_metrics(metrics, labels, outputs)
        loss = float(np.mean(self.per_example_loss(labels, outputs).numpy()))
        return {"loss": loss, **metric_results(metrics)}

    def loss_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return _unpack(labels)[0], outputs

    def metric_space(self, labels: tf.Tensor, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return _unpack(labels)[0], outputs


# ---------------------------------------------------------------------------------------- data


def _describe_spec(spec: Any) -> str:
    if isinstance(spec, tf.TensorSpec):
        return f"tensor {spec.dtype.name}{list(spec.shape)}"
    if isinstance(spec, dict):
        return "{" + ", ".join(f"{k}: {_describe_spec(v)}" for k, v in spec.items()) + "}"
    if isinstance(spec, tuple | list):
        return "(" + ", ".join(_describe_spec(v) for v in spec) + ")"
    return type(spec).__name__


def _pack(*element: Any) -> tuple[Any, dict[str, Any]]:
    labels = {"y": element[1]}
    if len(element) == 3:
        labels["sample_weight"] = element[2]
    return element[0], labels


def _is_array_structure(value: Any) -> bool:
    leaves = tf.nest.flatten(value)
    return bool(leaves) and all(isinstance(leaf, np.ndarray | list | tf.Tensor) for leaf in leaves)


def _check_elements(dataset: tf.data.Dataset, *, argument: str) -> None:
    spec = dataset.element_spec
    if not isinstance(spec, tuple) or len(spec) not in (2, 3):
        raise DataError(
            f"tfpilot.fit: `{argument}` must yield (features, labels) or (features, labels, sample_weight) batches, "
            f"got elements {_describe_spec(spec)}; build it as tf.data.Dataset.from_tensor_slices((x, y)).batch(n)"
        )
    unbatched = [s for s in tf.nest.flatten(spec[1]) if isinstance(s, tf.TensorSpec) and s.shape.rank == 0]
    if unbatched:
        raise DataError(
            f"tfpilot.fit: `{argument}` looks unbatched (its labels are scalars, {_describe_spec(spec[1])}); "
            "call .batch(batch_size) on it"
        )


def _count_batches(dataset: tf.data.Dataset, *, argument: str, steps: int | None) -> int:
    cardinality = int(dataset.cardinality())
    if cardinality == tf.data.INFINITE_CARDINALITY:
        if steps:
            return steps
        raise DataError(f"tfpilot.fit: `{argument}` repeats forever; pass steps_per_epoch=N (or take(N) batches of it)")
    if cardinality == tf.data.UNKNOWN_CARDINALITY:
        # filter() and friends hide the length; one pass counts it (model.fit learns it the same way).
        cardinality = int(dataset.reduce(np.int64(0), lambda count, *_: count + 1))
    if cardinality == 0:
        raise DataError(f"tfpilot.fit: `{argument}` is empty (no batches)")
    return cardinality


class DatasetSource:
    """What the Trainer reads from a Pipeline, over the user's own data.

    Arrays are batched here and shuffled once per epoch with a seed derived from the epoch, so a
    resumed epoch skips exactly the batches it had run. A tf.data.Dataset is taken as it is (its
    own shuffling decides the order; a resume in the middle of an epoch skips batches by count).
    """

    num_classes = 0
    preprocessor = None
    # The user's batches are used as given: no TFRecord shards for the trainer to shard by file.
    streams = False

    def __init__(
        self,
        data: Any,
        validation_data: Any = None,
        *,
        batch_size: int,
        seed: int,
        steps_per_epoch: int | None = None,
    ) -> None:
        self.seed = seed
        self.findings: list[Finding] = []
        self._arrays, self._train = self._as_dataset(data, argument="data", batch_size=batch_size)
        self._validation = None
        if validation_data is not None:
            _, self._validation = self._as_dataset(validation_data, argument="validation_data", batch_size=batch_size)
            if int(self._validation.cardinality()) == tf.data.INFINITE_CARDINALITY:
                raise DataError(
                    "tfpilot.fit: `validation_data` repeats forever; pass validation_data.take(N) batches of it"
                )
        self.batches = _count_batches(self._train, argument="data", steps=steps_per_epoch)
        self.steps_per_epoch = min(steps_per_epoch, self.batches) if steps_per_epoch else self.batches
        first = next(iter(self._train.take(1)))
        self.first_batch: tuple[Any, Any, Any] = (first[0], first[1], first[2] if len(first) == 3 else None)
        self.batch_size = int(tf.shape(tf.nest.flatten(first[1])[0])[0])

    def _as_dataset(self, data: Any, *, argument: str, batch_size: int) -> tuple[tuple | None, tf.data.Dataset]:
        if isinstance(data, tf.data.Dataset):
            _check_elements(data, argument=argument)
            return None, data
        if isinstance(data, tuple | list) and len(data) in (2, 3) and all(_is_array_structure(part) for part in data):
            arrays = tuple(data)
            try:
                dataset = tf.data.Dataset.from_tensor_slices(arrays)
            except (ValueError, TypeError) as exc:
                raise DataError(
                    f"tfpilot.fit: `{argument}` arrays do not line up ({_first_line(exc)}); features, labels (and "
                    "sample weights) need the same number of rows"
                ) from None
            return arrays, dataset.batch(batch_size)
        raise DataError(
            f"tfpilot.fit: `{argument}` must be a tf.data.Dataset of (x, y[, sample_weight]) batches or a tuple "
            f"(x, y[, sample_weight]) of numpy arrays (or dicts of them), got {type(data).__name__}"
        )

    @property
    def element_spec(self) -> Any:
        return self._train.element_spec

    @property
    def raw_validation(self) -> tf.data.Dataset | None:
        return self._validation

    def num_examples(self, split: str) -> int:
        if split == "train":
            # The trainer derives batches per epoch from this; train.steps_per_epoch is set exactly.
            return self.steps_per_epoch * self.batch_size
        if split == "validation":
            return 1 if self._validation is not None else 0
        return 0

    def train(self, *, epoch: int, skip_batches: int = 0) -> tf.data.Dataset:
        if self._arrays is not None:
            rows = len(tf.nest.flatten(self._arrays[0])[0])
            dataset = (
                tf.data.Dataset.from_tensor_slices(self._arrays)
                .shuffle(rows, seed=self.seed * 100_003 + epoch, reshuffle_each_iteration=False)
                .batch(self.batch_size)
            )
        else:
            dataset = self._train
        dataset = dataset.map(_pack, num_parallel_calls=tf.data.AUTOTUNE)
        if skip_batches:
            dataset = dataset.skip(skip_batches)
        return dataset.prefetch(tf.data.AUTOTUNE)

    def evaluation(self, split: str, batch_size: int | None = None) -> tf.data.Dataset:
        source = self._train if split == "train" else self._validation
        if source is None:
            raise DataError(f"tfpilot.fit: no `{split}` data to evaluate")
        return source.map(_pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------------- signatures


def _input_names(model: keras.Model, features_spec: Any) -> list[str]:
    """One name per flattened feature (tf.nest order): dict keys, else the model's Input names."""
    if isinstance(features_spec, dict):
        # keras.tree sorts dict keys as tf.nest does, so names line up with tf.nest.flatten.
        return ["/".join(str(part) for part in path) for path, _ in keras.tree.flatten_with_path(features_spec)]
    names = [getattr(tensor, "name", None) for tensor in (getattr(model, "inputs", None) or [])]
    leaves = tf.nest.flatten(features_spec)
    if len(names) == len(leaves) and all(names):
        return [str(name) for name in names]
    return ["inputs"] if len(leaves) == 1 else [f"input_{i}" for i in range(len(leaves))]


def signature_inputs(model: keras.Model, features_spec: Any) -> list[dict[str, Any]]:
    """Serving inputs from the data's element_spec: name, signature key, dtype, shape (batch None)."""
    from tfpilot.data.names import signature_keys

    names = _input_names(model, features_spec)
    keys = signature_keys(names)
    return [
        {"name": name, "key": keys[name], "dtype": spec.dtype.name, "shape": [None, *spec.shape.as_list()[1:]]}
        for name, spec in zip(names, tf.nest.flatten(features_spec), strict=True)
    ]


# ------------------------------------------------------------------------------------ run dir


def _serialize(value: Any) -> Any:
    """Keras' own serialisation of a loss/metric argument (strings stay strings); None if it has none."""
    if value is None:
        return None
    try:
        serialized = keras.saving.serialize_keras_object(value)
        json.dumps(serialized)
    except Exception:  # lambdas and unregistered callables have no serialisable form
        return None
    return serialized


def _deserialize(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, list):
        return [_deserialize(v) for v in value]
    if isinstance(value, dict) and "class_name" not in value:
        return {k: _deserialize(v) for k, v in value.items()}
    return keras.saving.deserialize_keras_object(value)


def read_fit_spec(run: RunDir) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(run.fit_spec_path.read_text())
    if spec.get("kind") != FIT_SPEC_KIND:
        raise ConfigError(f"`{run.fit_spec_path}` is not a tfpilot.fit spec (kind {spec.get('kind')!r})")
    return spec


def load_fit_model(run: RunDir) -> keras.Model:
    """The trained model from the run's .keras archive, loaded in Keras' safe mode (no lambdas)."""
    path = run.fit_model_path
    if not path.is_file():
        raise ConfigError(
            f"run `{run.root}` has no saved model ({path} is missing; see findings.json for why it was not saved)"
        )
    try:
        return keras.saving.load_model(path, compile=False, safe_mode=True)
    except Exception as exc:
        raise ModelError(
            f"cannot load `{path}` ({_first_line(exc)}); custom layers must be registered with "
            "@keras.saving.register_keras_serializable() and define get_config(), and be importable here"
        ) from None


def _save_model(model: keras.Model, run: RunDir) -> Finding | None:
    """model.keras, written beside and renamed (never half-written); a finding if Keras cannot."""
    run.fit_dir.mkdir(parents=True, exist_ok=True)
    partial = run.fit_dir / "model.partial.keras"
    try:
        model.save(partial)
        # Prove it loads the way evaluate/export will load it, in safe mode.
        keras.saving.load_model(partial, compile=False, safe_mode=True)
    except Exception as exc:
        partial.unlink(missing_ok=True)
        return Finding(
            code="FIT-MODEL-NOT-SAVED",
            severity=Severity.WARNING,
            title="Model not saved as .keras",
            message=f"the trained model could not be saved and reloaded as .keras ({_first_line(exc)}), so "
            "`tfpilot evaluate/export` cannot use this run; its weights are in checkpoints/",
            location=str(run.fit_model_path),
            evidence={"error": _first_line(exc)},
            fix="register custom layers with @keras.saving.register_keras_serializable() and give them "
            "get_config(); replace Lambda layers with such a layer",
        )
    partial.replace(run.fit_model_path)
    return None


def _write_spec(run: RunDir, *, model: keras.Model, source: DatasetSource, head: CompiledHead) -> None:
    from tfpilot.atomic import atomic_write_json

    features_spec = source.element_spec[0]
    spec = {
        "kind": FIT_SPEC_KIND,
        "features": "dict"
        if isinstance(features_spec, dict)
        else ("tensor" if not tf.nest.is_nested(features_spec) else "list"),
        "inputs": signature_inputs(model, features_spec),
        "outputs": list(head.output_names or []),
        "loss": _serialize(head.loss),
        "loss_weights": head.loss_weights,
        "metrics": _serialize(head.metrics),
        "weighted_metrics": _serialize(head.weighted_metrics),
        "batch_size": source.batch_size,
        "validation_data": str(run.fit_validation_path.relative_to(run.root)) if source.raw_validation else None,
    }
    atomic_write_json(run.fit_spec_path, spec)


def _save_sample(run: RunDir, *, model: keras.Model, features: Any, rows: int = 8) -> None:
    """The first rows of a training batch, keyed by serving input key (npz: plain arrays, no pickle)."""
    inputs = signature_inputs(model, tf.nest.map_structure(lambda t: tf.TensorSpec.from_tensor(t), features))
    arrays: dict[str, Any] = {}
    for spec, leaf in zip(inputs, tf.nest.flatten(features), strict=True):
        array = np.asarray(leaf)[:rows]
        # String tensors come out as object arrays, which npz could only store by pickling.
        arrays[spec["key"]] = array.astype(np.bytes_) if array.dtype == object else array
    partial = run.fit_dir / "sample_features.partial.npz"
    np.savez(partial, **arrays)
    partial.replace(run.fit_sample_path)


def _save_validation(run: RunDir, dataset: tf.data.Dataset) -> None:
    partial = run.fit_dir / "validation.partial"
    shutil.rmtree(partial, ignore_errors=True)
    dataset.save(str(partial))
    shutil.rmtree(run.fit_validation_path, ignore_errors=True)
    partial.rename(run.fit_validation_path)


# ------------------------------------------------------------------------------------- fit


def _objectives(model: keras.Model, given: dict[str, Any]) -> dict[str, Any]:
    """loss, loss_weights, metrics, weighted_metrics, optimizer: tfpilot.fit's arguments win over
    model.compile's."""
    compiled: dict[str, Any] = {}
    config = getattr(getattr(model, "_compile_config", None), "config", None)
    if getattr(model, "compiled", False) and isinstance(config, dict):
        compiled = {key: config.get(key) for key in _COMPILE_ARGUMENTS}
        compiled["optimizer"] = getattr(model, "optimizer", None)
    merged = {**compiled, **{k: v for k, v in given.items() if v is not None}}
    if merged.get("loss") is None:
        raise ModelError(
            "tfpilot.fit: the model has no loss; call model.compile(optimizer=..., loss=...) first or pass "
            "loss=... (and metrics=...) to tfpilot.fit"
        )
    if isinstance(merged.get("optimizer"), str):
        merged["optimizer"] = keras.optimizers.get(merged["optimizer"])
    return merged


def _train_config(*, name: str, runs_dir: str | Path, epochs: int, options: dict[str, Any]) -> Any:
    from pydantic import ValidationError

    from tfpilot.config.schema import RunConfig

    refused = [key for key in options if key in _NOT_FOR_FIT]
    if refused:
        key = refused[0]
        raise ConfigError(f"tfpilot.fit: `{key}` is for tfpilot's own heads, not a compiled loss; {_NOT_FOR_FIT[key]}")
    strategy = options.get("strategy", "default")
    if str(getattr(strategy, "value", strategy)) not in ("auto", "default"):
        raise ConfigError(
            f"tfpilot.fit trains on one device for now, got strategy={strategy!r}; use `tfpilot train` with a config "
            "for distributed training"
        )
    train = {**_FIT_DEFAULTS, **options, "epochs": epochs, "strategy": "default"}
    try:
        return RunConfig.model_validate(
            {"name": name, "runs_dir": str(runs_dir), "data": {"kind": "arrays"}, "train": train}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"] if part != "train") or "<root>"
        argument = "name" if key == "name" else key
        if first["type"] == "extra_forbidden":
            raise ConfigError(
                f"tfpilot.fit: unknown option `{argument}`; expected model.compile's loss, loss_weights, metrics, "
                "weighted_metrics or a train option of `tfpilot config schema` (batch_size, steps_per_execution, ...)"
            ) from None
        raise ConfigError(
            f"tfpilot.fit: `{argument}` {first['msg'].removeprefix('Value error, ')} (got {first.get('input')!r})"
        ) from None


def _check_monitor(config: Any, head: CompiledHead, *, has_validation: bool) -> None:
    stopping = config.train.early_stopping
    if stopping is None:
        return
    names = ["loss", *head.metric_names()]
    logged = [*names, *([f"val_{n}" for n in names] if has_validation else [])]
    if stopping.monitor not in logged:
        raise ConfigError(
            f"tfpilot.fit: early_stopping monitor `{stopping.monitor}` is not logged; expected one of {logged}"
        )


def fit(
    model: keras.Model,
    data: Any,
    *,
    validation_data: Any = None,
    epochs: int,
    name: str,
    runs_dir: str | Path = "runs",
    resume: bool = False,
    save_validation_data: bool = True,
    hooks: Iterable[Any] | None = None,
    **train_options: Any,
) -> Any:
    """Train a keras.Model of your own with tfpilot's loop; returns a TrainResult.

    `data`: a tf.data.Dataset of (x, y) or (x, y, sample_weight) batches (x and y may be dicts keyed
    by input and output names), or a tuple of numpy arrays (batched by `batch_size`, default 32,
    and shuffled each epoch). The model's compiled optimizer, loss, loss_weights and metrics are
    used; `loss=`, `loss_weights=`, `metrics=`, `weighted_metrics=` here take their place (an
    uncompiled model needs `loss=`). Other keyword arguments are `tfpilot train`'s train options
    (steps_per_execution, jit_compile, nan_policy, checkpoint_every_steps, early_stopping, ...).
    The run directory `runs_dir/name` gets config.yaml, history.json, TensorBoard logs,
    checkpoints, metrics.json, findings.json and fit/ (the model as .keras, the data's spec and
    the validation batches), so `tfpilot evaluate` and `tfpilot export` work on it afterwards.
    `resume=True` continues from the run's latest checkpoint.
    """
    from tfpilot.atomic import atomic_write_json
    from tfpilot.config import dump_config
    from tfpilot.train.trainer import Trainer

    if not isinstance(model, keras.Model):
        raise ModelError(f"tfpilot.fit: `model` must be a keras.Model, got {type(model).__name__}")
    given = {key: train_options.pop(key) for key in _COMPILE_ARGUMENTS if key in train_options}
    config = _train_config(name=name, runs_dir=runs_dir, epochs=epochs, options=train_options)
    objectives = _objectives(model, given)
    source = DatasetSource(
        data,
        validation_data,
        batch_size=config.train.batch_size,
        seed=config.train.seed,
        steps_per_epoch=config.train.steps_per_epoch,
    )
    features, labels, sample_weight = source.first_batch
    if _looks_unbatched(model, source.element_spec[0]):
        raise DataError(
            f"tfpilot.fit: `data` looks unbatched (features {_describe_spec(source.element_spec[0])} are one rank short "
            "of the model's inputs); call .batch(batch_size) on it"
        )
    try:
        outputs = model(features, training=False)
    except Exception as exc:
        raise DataError(
            f"tfpilot.fit: the model cannot be called on the data's features {_describe_spec(source.element_spec[0])} "
            f"({_first_line(exc)}); give features keyed by the model's input names, with its input shapes"
        ) from None
    output_names = list(getattr(model, "output_names", None) or []) or None
    if isinstance(labels, dict) and output_names and len(output_names) > 1:
        unknown = sorted(set(labels) - set(output_names))
        if unknown:
            raise DataError(
                f"tfpilot.fit: the data's labels {sorted(labels)} name {unknown}, which are not outputs of the model "
                f"{output_names}; key the labels by the output names"
            )
    head = CompiledHead(
        loss=objectives["loss"],
        loss_weights=objectives.get("loss_weights"),
        metrics=objectives.get("metrics"),
        weighted_metrics=objectives.get("weighted_metrics"),
        output_names=output_names,
        sample=(labels, outputs, sample_weight),
    )
    _check_monitor(config, head, has_validation=source.raw_validation is not None)
    config.train.steps_per_epoch = source.steps_per_epoch

    run = RunDir.at(config.run_path)
    run.root.mkdir(parents=True, exist_ok=True)
    if not resume:
        # A fresh run starts fresh findings and TensorBoard curves (as `tfpilot train` does).
        run.findings_path.unlink(missing_ok=True)
        shutil.rmtree(run.logs, ignore_errors=True)
    dump_config(config, run.config_path)
    trainer = Trainer(
        config,
        pipeline=source,  # type: ignore[arg-type]  # the parts of a Pipeline the trainer reads
        run=run,
        model=model,
        hooks=list(hooks or []),
        head=head,
        optimizer=objectives.get("optimizer"),
    )
    try:
        result = trainer.fit(resume=resume)
    except TfpilotError:
        write_findings(run.findings_path, trainer.findings, append=True)
        raise
    metrics: dict[str, Any] = {"train": {**trainer.evaluate("train"), "batches": source.steps_per_epoch}}
    if source.raw_validation is not None:
        metrics["validation"] = trainer.evaluate("validation")
    atomic_write_json(run.metrics_path, metrics)
    findings = list(result.findings)
    saved = _save_model(model, run)
    if saved is not None:
        findings.append(saved)
        result.findings.append(saved)
    if source.raw_validation is not None and save_validation_data:
        _save_validation(run, source.raw_validation)
    _save_sample(run, model=model, features=features)
    _write_spec(run, model=model, source=source, head=head)
    if not save_validation_data and run.fit_validation_path.exists():
        shutil.rmtree(run.fit_validation_path)
    write_findings(run.findings_path, [*source.findings, *findings], append=True)
    return result


# -------------------------------------------------------------------------------- evaluate


def evaluate_fit_run(run: RunDir, *, data_path: str | Path | None = None) -> dict[str, float]:
    """Loss and metrics of a tfpilot.fit run's saved model on its validation batches (or on a
    dataset written by tf.data.Dataset.save at `data_path`)."""
    spec = read_fit_spec(run)
    if data_path is None:
        if not spec.get("validation_data"):
            raise ConfigError(
                f"run `{run.root}` was trained by tfpilot.fit without validation data to evaluate on; pass --data DIR "
                "(batches written by tf.data.Dataset.save)"
            )
        data_path = run.root / spec["validation_data"]
    if not Path(data_path).exists():
        raise ConfigError(f"`{data_path}` does not exist; expected a directory written by tf.data.Dataset.save")
    try:
        dataset = tf.data.Dataset.load(str(data_path))
    except Exception as exc:
        raise DataError(f"cannot read `{data_path}` as a saved tf.data.Dataset ({_first_line(exc)})") from None
    _check_elements(dataset, argument=str(data_path))
    if spec.get("loss") is None:
        raise ConfigError(
            f"run `{run.root}`'s loss has no Keras serialisation (a lambda or an unregistered function); register it "
            "with @keras.saving.register_keras_serializable() or evaluate in Python"
        )
    model = load_fit_model(run)
    first = next(iter(dataset.take(1)))
    features, labels = first[0], first[1]
    outputs = model(features, training=False)
    head = CompiledHead(
        loss=_deserialize(spec["loss"]),
        loss_weights=spec.get("loss_weights"),
        metrics=_deserialize(spec.get("metrics")),
        weighted_metrics=_deserialize(spec.get("weighted_metrics")),
        output_names=spec.get("outputs") or None,
        sample=(labels, outputs, first[2] if len(first) == 3 else None),
    )
    metrics = head.make_metrics()
    loss = keras.metrics.Mean(name="loss")

    # One traced loop over the whole dataset, as the trainer's evaluation runs: Keras' per-output
    # loss trackers weigh each batch by its static row count, which a loop in the graph leaves
    # unknown for every batch alike (so the numbers match the run's val_ history).
    @tf.function
    def run_all(batches: tf.data.Dataset) -> tf.Tensor:
        count = tf.constant(0, tf.int64)
        for features, labels in batches:
            predicted = model(features, training=False)
            loss.update_state(head.per_example_loss(labels, predicted))
            head.update_metrics(metrics, labels, predicted)
            count += 1
        return count

    batches = int(run_all(dataset.map(_pack, num_parallel_calls=tf.data.AUTOTUNE)))
    return {"loss": float(loss.result()), **metric_results(metrics), "batches": batches}
