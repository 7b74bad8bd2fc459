"""What a `tfpilot.fit` run leaves in fit/ so `tfpilot evaluate` and `tfpilot export` work later,
in another process, from files alone: the model as .keras, the serving inputs, a few example
rows, the validation batches and the modules that define the model's custom objects."""

from __future__ import annotations

import collections
import importlib
import inspect
import json
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from tfpilot import _tf_private
from tfpilot.errors import ConfigError, ModelError
from tfpilot.findings import Finding, Severity
from tfpilot.rundir import RunDir

__all__ = [
    "FIT_SPEC_KIND",
    "first_line",
    "signature_inputs",
    "defining_modules",
    "import_modules",
    "read_fit_spec",
    "load_fit_model",
    "save_model",
    "write_spec",
    "save_sample",
    "save_validation",
]

FIT_SPEC_KIND = "tfpilot.fit"
# Names Keras gives inputs nobody named; they count up with the process's history, so a served
# input called `keras_tensor_56` would change name from one training process to the next.
_AUTOMATIC_NAME = re.compile(r"^(keras_tensor|input_layer|input)(_\d+)?$")
# A model whose input is an intermediate tensor (FeatureSpace.get_encoded_features()) gets an
# Input Keras names after that tensor plus "CLONE" (Functional's input cloning): `keras_tensor_80CLONE`.
_CLONE_SUFFIX = re.compile(r"(CLONE)+$")
# Modules whose objects Keras deserialises by itself.
_KNOWN_PACKAGES = ("keras", "tensorflow", "tf_keras", "builtins", "numpy", "tfpilot")


# Keras prints its error text bold (terminal escapes), and TensorFlow prefixes an op's error with
# the function node it ran in; neither belongs in a one-line message or findings.json.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_TF_NODE = re.compile(r"\{\{function_node [^}]*\}\}\s*")


_TF_OP_NODE = re.compile(r"\s*\[\[(?:\{\{function_node [^}]*\}\})*\{\{node ([^}]*)\}\}\]\].*", re.S)


def op_error_line(error: BaseException, *, limit: int = 300) -> str:
    """What a TensorFlow op error says went wrong, as one line with the node it happened at: a graph
    execution error leads with "Graph execution error:" and the defining stack, and says it last
    ("indices[27,0] = -2147483347 is not in [0, 301) [[{{node User-Embedding/GatherV2}}]]")."""
    if not isinstance(error, tf.errors.OpError):
        return first_line(error, limit=limit)
    text = _ANSI.sub("", error.message or str(error)).strip()
    last = text.split("\n\n")[-1].strip()
    node = _TF_OP_NODE.search(last)
    said = " ".join(_TF_OP_NODE.sub("", last).split())
    if not said or said.startswith("File "):
        return first_line(error, limit=limit)
    line = f"{said} (at {node.group(1)})" if node else said
    return line if len(line) <= limit else line[: limit - 3] + "..."


def first_line(error: BaseException, *, limit: int = 300) -> str:
    """The error's first paragraph as one line. Keras leads with "Exception encountered when
    calling X.call()." and says what went wrong after it, and wraps long sentences over lines
    ("Object VAE was created by passing\nnon-serializable argument values ...")."""
    text = _TF_NODE.sub("", _ANSI.sub("", str(error)))
    paragraphs = [" ".join(line.strip() for line in block.splitlines()) for block in text.split("\n\n")]
    lines = [p.strip() for p in paragraphs if p.strip()]
    useful = [line for line in lines if not line.startswith(("Exception encountered", "Arguments received"))]
    line = (useful or lines or [type(error).__name__])[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


# --------------------------------------------------------------------------------- signatures


def _input_names(model: keras.Model, features_spec: Any) -> list[str]:
    """One name per flattened feature (tf.nest order): dict keys, else the model's Input names
    when a person chose them, else `inputs` / `input_<i>`."""
    if isinstance(features_spec, dict):
        # In tf.nest's order, which every caller zips the names with: tf.nest sorts the keys of every
        # mapping, keras.tree keeps an OrderedDict's order (make_csv_dataset yields one), so its
        # paths are reordered by flattening a structure of their indices with tf.nest.
        paths = [path for path, _ in keras.tree.flatten_with_path(features_spec)]
        order = tf.nest.flatten(keras.tree.pack_sequence_as(features_spec, list(range(len(paths)))))
        return ["/".join(str(part) for part in paths[index]) for index in order]
    leaves = tf.nest.flatten(features_spec)
    names = [name for name, _ in _symbolic_inputs(model)]
    if len(names) == len(leaves) and all(names) and not any(_AUTOMATIC_NAME.match(str(n)) for n in names):
        return [str(name) for name in names]
    return ["inputs"] if len(leaves) == 1 else [f"input_{i}" for i in range(len(leaves))]


def signature_inputs(model: keras.Model, features_spec: Any, *, sample_rows: int | None = None) -> list[dict[str, Any]]:
    """Serving inputs from the features the step received: name, signature key, dtype, shape (batch None, or the
    batch the model's Input declares where the sample rows are a whole batch of it). `sample_rows`: how many
    rows the sample holds, where `features_spec` says None for its batch (the serving shapes)."""
    from tfpilot.data.names import signature_keys

    names = _input_names(model, features_spec)
    keys = signature_keys(names)
    declared = _declared_input_shapes(model, names)
    rows = []
    for name, spec in zip(names, tf.nest.flatten(features_spec), strict=True):
        shape = [None, *spec.shape.as_list()[1:]]
        model_shape = declared.get(name)
        if model_shape is not None and len(model_shape) == len(shape) + 1 and model_shape[-1] == 1:
            # Keras adds the trailing 1 itself when the data has one dimension less than the Input
            # (a CSV column batched to (batch,) into Input(shape=(1,))): clients send what the model declares.
            shape = [None, *model_shape[1:]]
        sample = sample_rows if sample_rows is not None else (spec.shape.as_list() or [None])[0]
        if model_shape and model_shape[0] is not None and sample == model_shape[0]:
            # a batch the model declares (`Input(batch_shape=(1, None, 1))` of a stateful RNN, whose state has
            # that batch): its graph computes on that batch only, so the signature says it. The sample rows
            # tell: they are a whole batch of that size only where the model refused fewer (fit/api.py
            # _sample_features). A Sequential built on its first eager batch (run_eagerly=True) declares that
            # batch too, yet computes on any: its sample is a few rows, and the signature takes any number.
            shape = [model_shape[0], *shape[1:]]
        rows.append({"name": name, "key": keys[name], "dtype": spec.dtype.name, "shape": shape})
    return rows


def _symbolic_inputs(model: keras.Model) -> list[tuple[str | None, list[int | None]]]:
    """(name without Keras' clone suffix, shape) of each of the model's Inputs; empty for a subclassed model."""
    try:
        inputs = list(getattr(model, "inputs", None) or [])
    except (AttributeError, ValueError):  # subclassed models have no symbolic inputs
        return []
    found: list[tuple[str | None, list[int | None]]] = []
    for tensor in inputs:
        name = getattr(tensor, "name", None)
        found.append((_CLONE_SUFFIX.sub("", name) if isinstance(name, str) else name, list(tensor.shape)))
    return found


def _declared_input_shapes(model: keras.Model, names: list[str]) -> dict[str, list[int | None]]:
    """The model's own Input shapes by input name (empty for a model without symbolic inputs)."""
    inputs = _symbolic_inputs(model)
    by_name = {str(name): shape for name, shape in inputs}
    if all(name in by_name for name in names):
        return {name: by_name[name] for name in names}
    if len(inputs) == len(names):  # a list of arrays goes to the Inputs in order
        return {name: shape for name, (_, shape) in zip(names, inputs, strict=True)}
    return {}


# ----------------------------------------------------------------------------- custom objects


def defining_modules(model: keras.Model) -> list[str]:
    """Modules (other than Keras' and TensorFlow's) that define the model's classes, its layers,
    their activations and the compiled losses and metrics: what a new process must import before
    Keras can load the .keras archive."""
    objects: list[Any] = [type(model)]
    for layer in _tf_private.flatten_layers(model):
        objects.append(type(layer))
        for attribute in vars(layer).values():
            if callable(attribute) and hasattr(attribute, "__code__"):
                objects.append(attribute)  # an activation or initializer function
    config = _tf_private.compile_config(model)
    for key in ("loss", "metrics", "weighted_metrics"):
        for leaf in tf.nest.flatten(config.get(key)):
            if leaf is not None and not isinstance(leaf, str | int | float):
                objects.append(leaf if hasattr(leaf, "__code__") or isinstance(leaf, type) else type(leaf))
    modules: list[str] = []
    for value in objects:
        module = getattr(value, "__module__", None)
        if isinstance(module, str) and module.split(".")[0] not in _KNOWN_PACKAGES and module not in modules:
            modules.append(module)
    return modules


_KERAS_TYPES = (keras.layers.Layer, keras.losses.Loss, keras.metrics.Metric, keras.optimizers.Optimizer)


def custom_objects_in(modules: list[str]) -> dict[str, Any]:
    """Keras classes and plain functions defined in these (already imported) modules, by name.

    Given to load_model as custom_objects, so a class or function the user never registered
    (keras-io examples rarely do) still loads wherever its module can be imported."""
    objects: dict[str, Any] = {}
    for name in modules:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attribute, value in vars(module).items():
            if attribute.startswith("_") or getattr(value, "__module__", None) != name:
                continue
            if (isinstance(value, type) and issubclass(value, _KERAS_TYPES)) or inspect.isfunction(value):
                objects[attribute] = value
    return objects


def missing_object(error: BaseException) -> str | None:
    """The name of the class or function Keras could not find, from its error text."""
    match = _MISSING.search(str(error))
    return match.group(1) if match else None


def module_roots(modules: list[str]) -> dict[str, str]:
    """The sys.path entry each (imported) module was found under: `/proj` for /proj/pkg/mod.py."""
    roots: dict[str, str] = {}
    for name in modules:
        file = getattr(sys.modules.get(name), "__file__", None)
        if name == "__main__" or not file:
            continue
        path = Path(file).resolve()
        parts = name.split(".")
        depth = len(parts) if path.stem == "__init__" else len(parts) - 1
        roots[name] = str(path.parents[depth])
    return roots


def import_modules(modules: list[str], roots: dict[str, str] | None = None) -> None:
    """Import the modules a run recorded (and `--import` ones) so their registered objects exist.

    Only modules the user named or whose objects the user's own training process used are
    imported, from the current directory and sys.path (never from a directory the run names: a
    run directory may come from someone else); `__main__` (a script) cannot be."""
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    for module in modules:
        if module == "__main__":
            continue
        try:
            importlib.import_module(module)
        except ImportError as exc:
            root = (roots or {}).get(module)
            where = (
                f"; training imported it from {root}: run there, or `PYTHONPATH={shlex.quote(root)} tfpilot ...`"
                if root
                else "; run from the directory that holds it or add it to PYTHONPATH"
            )
            raise ModelError(
                f"cannot import `{module}`, which defines custom objects of this model ({first_line(exc)}){where}"
            ) from None


# ------------------------------------------------------------------------------------ run dir


def unusable_reason(run: RunDir) -> str:
    """Why a tfpilot.fit run has no model to load or serve, in the run's own words: its
    FIT-NOTHING-TO-SERVE or FIT-MODEL-NOT-SAVED finding (findings.json), with the fix."""
    try:
        findings = json.loads(run.findings_path.read_text())
    except (OSError, ValueError):
        findings = []
    for code in ("FIT-NOTHING-TO-SERVE", "FIT-MODEL-NOT-SAVED"):
        for finding in findings if isinstance(findings, list) else []:
            if isinstance(finding, dict) and finding.get("code") == code:
                fix = f"; fix: {finding['fix']}" if finding.get("fix") else ""
                return f"{code}: {finding.get('message', '')}{fix}"
    return "see findings.json for why it was not saved"


def read_fit_spec(run: RunDir) -> dict[str, Any]:
    if not run.fit_spec_path.is_file():
        # tfpilot.fit writes no spec when there is no forward pass to serve (a GAN without call()).
        raise ConfigError(f"run `{run.root}` has no model to evaluate or export ({unusable_reason(run)})")
    spec: dict[str, Any] = json.loads(run.fit_spec_path.read_text())
    if spec.get("kind") != FIT_SPEC_KIND:
        raise ConfigError(f"`{run.fit_spec_path}` is not a tfpilot.fit spec (kind {spec.get('kind')!r})")
    return spec


_MISSING = re.compile(r"(?:Could not locate (?:class|function) |Unknown (?:layer|object|class|function)[^']*)'([^']+)'")


def load_fit_model(run: RunDir, *, extra_modules: list[str] | None = None, compile: bool = False) -> keras.Model:
    """The trained model from the run's .keras archive, loaded in Keras' safe mode (no lambdas),
    after importing the modules that define its custom objects."""
    path = run.fit_model_path
    if not path.is_file():
        raise ConfigError(f"run `{run.root}` has no saved model ({path} is missing: {unusable_reason(run)})")
    spec = read_fit_spec(run) if run.fit_spec_path.is_file() else {}
    recorded = list(spec.get("modules") or [])
    modules = [*recorded, *(extra_modules or [])]
    import_modules(modules, spec.get("module_roots"))
    objects = custom_objects_in([m for m in modules if m != "__main__"])
    try:
        return keras.saving.load_model(path, custom_objects=objects, compile=compile, safe_mode=True)
    except Exception as exc:
        line = first_line(exc)
        missing = missing_object(exc)
        if missing:
            where = (
                "it was defined in the training script itself (__main__); move it into a module and pass --import MODULE"
                if "__main__" in recorded
                else "pass --import MODULE naming the module that defines it"
            )
            raise ModelError(
                f"cannot load `{path}`: the custom object `{missing}` is not known here; {where}"
            ) from None
        raise ModelError(
            f"cannot load `{path}` ({line}); custom layers must be registered with "
            "@keras.saving.register_keras_serializable() and define get_config()"
        ) from None


def _chain_text(exc: BaseException) -> str:
    """Every message of the exception and its causes, innermost last."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(str(current))
        current = current.__cause__ or current.__context__
    return "\n".join(parts)


def _is_subclassed_model(model: keras.Model, class_name: str) -> bool:
    """Whether the model, or a part of it, of this class name is a user's keras.Model subclass
    (Keras' own Functional and Sequential are rebuilt from their layers)."""
    from tfpilot import _tf_private

    for part in _tf_private.flatten_layers(model, include_self=True):
        if type(part).__name__ == class_name:
            return isinstance(part, keras.Model) and not type(part).__module__.startswith("keras.")
    return False


def save_model(model: keras.Model, run: RunDir) -> Finding | None:
    """model.keras, written beside and renamed (never half-written); a finding if Keras cannot."""
    run.fit_dir.mkdir(parents=True, exist_ok=True)
    partial = run.fit_dir / "model.partial.keras"
    try:
        model.save(partial)
        # Prove it loads the way evaluate/export will load it: safe mode, with the objects of the
        # modules that define the model's parts (the training script's own included, here).
        keras.saving.load_model(
            partial, custom_objects=custom_objects_in(defining_modules(model)), compile=False, safe_mode=True
        )
    except Exception as exc:
        partial.unlink(missing_ok=True)
        missing = missing_object(exc)
        lambda_layer = "Lambda" in str(exc) or "lambda" in str(exc)
        # Keras wraps the real error in its own sentences: read the innermost one first
        unexpected = re.search(r"(\w+)?\.?__init__\(\) got an unexpected keyword argument '(\w+)'", _chain_text(exc))
        if unexpected and not missing:
            owner = f"`{unexpected.group(1)}`" if unexpected.group(1) else "a layer class of the model"
            cause = f"Keras rebuilds {owner} with its base config and its __init__ refuses `{unexpected.group(2)}`"
            fix = (
                f"let {owner}.__init__ take **kwargs and pass them on: `super().__init__(**kwargs)` "
                "(Keras passes name, trainable and dtype back when it loads the layer)"
            )
        elif missing:
            cause = f"Keras cannot find `{missing}` by name when it loads the model"
            fix = (
                f"define `{missing}` in a module of your own (not inside a function) and register it with "
                "@keras.saving.register_keras_serializable(); classes also need get_config() when their __init__ "
                "takes arguments"
            )
        elif "get_config" in str(exc):
            name = re.search(r"Object (\w+) was created", str(exc))
            culprit = f"`{name.group(1)}`" if name else "a class of the model"
            if name and _is_subclassed_model(model, name.group(1)):
                # Keras' own sentence blames "non-serializable argument values" even for plain
                # numbers: Model.__new__ hands Operation.__new__ none of the arguments to record.
                why = (
                    "Keras records no __init__ arguments of a subclassed Model (not even numbers or strings), so "
                    "only its own get_config() can describe them"
                )
            else:
                why = (
                    "its __init__ takes arguments that its get_config() does not describe (Keras records a layer's "
                    "arguments itself only when all are str, int, float, bool or None; not sub-models or layers)"
                )
            cause = f"Keras cannot rebuild {culprit} from its config: {why}"
            fix = (
                f"give {culprit} get_config() returning its __init__ arguments (sub-models and layers serialised "
                "with keras.saving.serialize_keras_object) and a from_config() that deserialises them"
            )
        elif lambda_layer:
            cause = "a Lambda layer cannot be loaded in Keras' safe mode"
            fix = "replace the Lambda layer with a small layer class (call()) registered with @keras.saving.register_keras_serializable()"
        else:
            cause = first_line(exc)
            fix = "register custom layers with @keras.saving.register_keras_serializable() and give them get_config()"
        return Finding(
            code="FIT-MODEL-NOT-SAVED",
            severity=Severity.WARNING,
            title="Model not saved as .keras",
            message=f"the trained model could not be saved and reloaded as .keras: {cause}; `tfpilot evaluate/export` "
            "cannot use this run (its weights are in checkpoints/)",
            location=str(run.fit_model_path),
            evidence={"error": first_line(exc), **({"missing": missing} if missing else {})},
            fix=fix,
        )
    partial.replace(run.fit_model_path)
    return None


def _snake(name: str) -> str:
    """A class name as Keras turns it into a layer name (keras.src.utils.naming.to_snake_case)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", re.sub(r"\W+", "", name))
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


# Keras names a layer nobody named after its class, with a per-process counter: `dense`, `dense_7`.
_AUTO_NAME = re.compile(r"^(?P<stem>[a-z0-9_]+?)(_\d+)?$")


def stable_output_names(model: keras.Model) -> list[str]:
    """The model's output names when the user chose them (`Dense(1, name="price")`); [] when any
    is Keras' own counter name (`conv2d_9`: building the same model again in the process gives
    `conv2d_14`), so the serving signature falls back to `outputs` / `output_0..n` (export/fit_model.py),
    names that do not depend on what else the process built."""
    names = [str(name) for name in (getattr(model, "output_names", None) or [])]
    layer_classes = {_snake(name) for name in dir(keras.layers) if name[:1].isupper()}
    for name in names:
        match = _AUTO_NAME.match(name)
        if match and match.group("stem") in layer_classes:
            return []
    return names


def _structure(features: Any) -> str:
    if isinstance(features, collections.OrderedDict):
        # Keras flattens it in its own order (keras.tree keeps it), so serving rebuilds that order.
        return "ordered_dict"
    if isinstance(features, dict):
        return "dict"
    return "list" if tf.nest.is_nested(features) else "tensor"


def write_spec(
    run: RunDir,
    *,
    model: keras.Model,
    features: Any,
    has_validation: bool,
    batch_size: int | None,
    shapes: list[list[int | None]] | None = None,
) -> None:
    """`shapes`: per feature leaf (tf.nest.flatten order), the serving shape (None where a
    dimension may vary); the sample's own shapes (batch None) without it."""
    from tfpilot.atomic import atomic_write_json

    features_spec = tf.nest.map_structure(tf.TensorSpec.from_tensor, features)
    if shapes is not None:
        leaves = tf.nest.flatten(features_spec)
        features_spec = tf.nest.pack_sequence_as(
            features_spec, [tf.TensorSpec(shape, spec.dtype) for spec, shape in zip(leaves, shapes, strict=True)]
        )
    spec = {
        "kind": FIT_SPEC_KIND,
        "features": _structure(features),
        # The features' keys in the order the model received them (an OrderedDict keeps its own).
        "order": list(features) if isinstance(features, dict) else None,
        "inputs": signature_inputs(model, features_spec, sample_rows=leading_rows(features)),
        "outputs": stable_output_names(model),
        "batch_size": batch_size,
        # compiled with jit_compile=True: Keras trains and predicts it under XLA, and export serves it so
        "jit_compile": bool(getattr(model, "jit_compile", False)),
        "modules": (modules := defining_modules(model)),
        # where each was imported from, for the error that tells a new process where to find it
        "module_roots": module_roots(modules),
        "validation_data": str(run.fit_validation_path.relative_to(run.root)) if has_validation else None,
    }
    atomic_write_json(run.fit_spec_path, spec)


def leading_rows(features: Any) -> int | None:
    """How many rows the features hold (their first leaf's leading dimension), None for a scalar or nothing."""
    leaves = tf.nest.flatten(features)
    shape = np.shape(leaves[0]) if leaves else ()
    return int(shape[0]) if shape else None


def save_sample(run: RunDir, *, model: keras.Model, features: Any) -> None:
    """The sample rows (a few rows of a training batch, or a whole batch for a model that computes
    only on batches of one size), keyed by serving input key (npz: plain arrays, no pickle)."""
    inputs = signature_inputs(model, tf.nest.map_structure(tf.TensorSpec.from_tensor, features))
    arrays: dict[str, Any] = {}
    for spec, leaf in zip(inputs, tf.nest.flatten(features), strict=True):
        array = np.asarray(leaf)
        if array.ndim == len(spec["shape"]) - 1:
            array = array[..., None]  # a (batch,) column stored as its Input(shape=(1,)) declares it
        # String tensors come out as object arrays, which npz could only store by pickling.
        arrays[spec["key"]] = array.astype(np.bytes_) if array.dtype == object else array
    run.fit_dir.mkdir(parents=True, exist_ok=True)
    partial = run.fit_dir / "sample_features.partial.npz"
    np.savez(partial, **arrays)
    partial.replace(run.fit_sample_path)


def save_validation(run: RunDir, dataset: tf.data.Dataset) -> None:
    partial = run.fit_dir / "validation.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        dataset.save(str(partial))
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)  # never leave half a dataset behind
        raise
    shutil.rmtree(run.fit_validation_path, ignore_errors=True)
    partial.rename(run.fit_validation_path)
