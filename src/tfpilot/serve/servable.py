"""One loaded SavedModel version: its signatures (as TF Serving describes them) and a runner.

Metadata comes from the SavedModel proto itself (saved_model.pb), as TF Serving reads it, so
signature_def JSON, tensor names and method_name (predict / classify / regress) match what a
TF Serving client expects. Inference calls ``loaded.signatures[name]``, which works for any
TF2 SavedModel and most TF1 ones. A TF1 SavedModel that ``tf.saved_model.load`` refuses (reference
variables such as ``float_ref``, signatures whose declared shapes disagree with the graph) is run
the way TF Serving runs every model: one Session over the imported graph, feeding and fetching
the signature's tensor names (:class:`_SessionModel`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from tfpilot import _tf_private
from tfpilot.errors import ServeError
from tfpilot.serve.status import Code, RequestError, as_request_error

__all__ = [
    "PREDICT_METHOD",
    "CLASSIFY_METHOD",
    "REGRESS_METHOD",
    "TensorSpecInfo",
    "SignatureInfo",
    "Servable",
    "load_servable",
    "read_signature_defs",
    "numpy_dtype",
]

PREDICT_METHOD = "tensorflow/serving/predict"
CLASSIFY_METHOD = "tensorflow/serving/classify"
REGRESS_METHOD = "tensorflow/serving/regress"

# Signatures TF2 adds for its own bookkeeping; they are listed in metadata (TF Serving lists
# them too) but are not callable.
_INTERNAL_SIGNATURES = {"__saved_model_init_op"}


_OBJECT = np.dtype(object)


def numpy_dtype(dtype_name: str) -> np.dtype:
    """The numpy dtype that carries values of a TF dtype (object for strings)."""
    if dtype_name == "string":
        return np.dtype(object)
    if dtype_name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)  # type: ignore[no-any-return]  # ml_dtypes is untyped
    if dtype_name == "half":
        return np.dtype(np.float16)
    return np.dtype(dtype_name)


@dataclasses.dataclass(frozen=True)
class TensorSpecInfo:
    """An input or output of a signature: its key, TF dtype name and shape (-1 = any)."""

    key: str
    dtype: str
    shape: tuple[int, ...] | None
    tensor_name: str = ""

    @property
    def numpy_dtype(self) -> np.dtype:
        return numpy_dtype(self.dtype)

    def describe(self) -> str:
        shape = "[?]" if self.shape is None else "[" + ",".join(str(d) for d in self.shape) + "]"
        return f"{self.dtype} {shape}"

    def accepts_shape(self, shape: tuple[int, ...]) -> bool:
        if self.shape is None:
            return True
        return len(shape) == len(self.shape) and all(
            want in (-1, got) for want, got in zip(self.shape, shape, strict=False)
        )


@dataclasses.dataclass(frozen=True)
class SignatureInfo:
    name: str
    method_name: str
    inputs: dict[str, TensorSpecInfo]
    outputs: dict[str, TensorSpecInfo]
    # Another name a request may use for an input (the CSV header `sepal length (cm)` for the
    # key `sepal_length_cm`), from the contract.json tfpilot export writes beside the model.
    aliases: dict[str, str] = dataclasses.field(default_factory=dict)

    def canonical(self, named: dict[str, Any]) -> dict[str, Any]:
        """Request keys with aliases replaced by signature keys (a key given twice is refused)."""
        if not self.aliases or not any(key in self.aliases for key in named):
            return named
        renamed: dict[str, Any] = {}
        for key, value in named.items():
            target = self.aliases.get(key, key)
            if target in renamed:
                raise RequestError.invalid(
                    f"input `{target}` is given twice (also as `{key}`); send each input under one name"
                )
            renamed[target] = value
        return renamed

    def written_name(self, key: str) -> str:
        """The name a client knows an input by: the CSV header's spelling when it was aliased."""
        for written, target in self.aliases.items():
            if target == key:
                return written
        return key

    def describe_inputs(self) -> str:
        return ", ".join(f"`{key}` {spec.describe()}" for key, spec in sorted(self.inputs.items()))

    def check_inputs(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The one check of typed inputs before a predict call, whichever front end decoded them:
        exact keys and dtypes; messages quote the signature. Strings become object arrays.

        Shapes are not checked: TF Serving feeds the request tensors and lets the graph decide
        (its quick start sends [1.0, 2.0, 5.0] to an input declared [-1, 1]); Servable.run turns
        a shape the signature refuses into INVALID_ARGUMENT.
        """
        if inputs.keys() != self.inputs.keys():
            raise RequestError.invalid(
                f"{input_mismatch_message(set(inputs), self.inputs)}; signature `{self.name}` expects "
                f"{self.describe_inputs()}"
            )
        checked = {}
        for name, array in inputs.items():
            spec = self.inputs[name]
            expected = spec.numpy_dtype
            got = array.dtype
            if got != expected and not (expected == _OBJECT and got.kind in "OSU"):
                got_name = "string" if got.kind in "OSU" else got.name
                raise RequestError.invalid(f"input `{name}` expects {spec.describe()}, got {got_name}")
            if expected == _OBJECT and got.kind != "O":
                array = array.astype(object)
            checked[name] = array
        return checked


def input_mismatch_message(sent: set[str], expected: dict[str, TensorSpecInfo]) -> str:
    """TF Serving's words for request inputs that are not the signature's: predict_util.cc
    (VerifyRequestInputsSize) when their numbers differ, else TensorFlow's
    cc/saved_model/util.cc (GetInputValues) naming the first signature input not sent."""

    def braced(names: set[str]) -> str:
        return "{" + ",".join(sorted(names)) + "}"

    if len(sent) != len(expected):
        return (
            f"input size does not match signature: {len(sent)}!={len(expected)} len({braced(sent)}) != "
            f"len({braced(set(expected))}). Sent extra: {braced(sent - set(expected))}. "
            f"Missing but required: {braced(set(expected) - sent)}."
        )
    alias = min(set(expected) - sent)
    return (
        f"Signature input alias: {alias}(feed name: {expected[alias].tensor_name}) not found in request and no "
        f"default value provided. Inputs expected to be in the request {braced(sent)}, or default input alias set: "
    )


def read_signature_defs(version_dir: Path) -> dict[str, Any]:
    """The serving meta graph's SignatureDef map (tfpilot.savedmodel's reader; errors as ServeError here)."""
    from tfpilot.errors import ExportError
    from tfpilot.savedmodel.metagraph import read_signature_defs as read_definitions

    try:
        return read_definitions(version_dir, any_meta_graph=True)
    except ExportError as error:
        raise ServeError(str(error)) from None


def _spec_from_proto(key: str, info: Any) -> TensorSpecInfo:
    import tensorflow as tf

    try:
        dtype = tf.dtypes.as_dtype(info.dtype).name
    except TypeError:
        dtype = "invalid"
    shape = None if info.tensor_shape.unknown_rank else tuple(int(d.size) for d in info.tensor_shape.dim)
    return TensorSpecInfo(key=key, dtype=dtype, shape=shape, tensor_name=info.name)


class Servable:
    """A loaded model version. Thread-safe: TF functions may run concurrently."""

    def __init__(
        self,
        *,
        name: str,
        version: int,
        path: Path,
        loaded: Any,
        signature_defs: Any,
        signatures: dict[str, SignatureInfo],
        input_aliases: dict[str, str] | None = None,
    ) -> None:
        # signature key -> the feature name a tf.Example carries (`mean_radius` -> `mean radius`)
        self.feature_names = {key: name for name, key in (input_aliases or {}).items()}
        self.name = name
        self.version = version
        self.path = path
        self.signature_defs = signature_defs  # tensorflow.serving.SignatureDefMap, for metadata
        self.signatures = signatures
        self._loaded = loaded
        self._functions = {key: loaded.signatures[key] for key in signatures}
        # A TF1 graph run in a session: its SignatureDef's dtypes and shapes are declarations the
        # graph may contradict, and the graph's own tensors decide (as in TF Serving).
        self.graph_decides = isinstance(loaded, _SessionModel)
        self.unloaded = False
        self.metadata_cache: dict[str, Any] | None = None  # signature_def as JSON, filled on first use

    def signature(self, name: str) -> SignatureInfo:
        name = name or "serving_default"
        found = self.signatures.get(name)
        if found is None:
            available = ", ".join(sorted(self.signatures)) or "none"
            raise RequestError.invalid(
                f'Serving signature name: "{name}" not found in signature def; available signatures: {available}'
            )
        return found

    def predict_signature(self, name: str) -> SignatureInfo:
        """The signature a Predict request names (serving_default when it names none).

        A missing one is FAILED_PRECONDITION `Serving signature key "X" not found.`, as TF
        Serving's RunPredict answers (servables/tensorflow/predict_util.cc); classify and regress
        use signature(), whose INVALID_ARGUMENT message is theirs."""
        name = name or "serving_default"
        found = self.signatures.get(name)
        if found is None:
            raise RequestError(Code.FAILED_PRECONDITION, f'Serving signature key "{name}" not found.')
        return found

    def run(self, signature_name: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Call one signature with already-validated arrays; TF errors become RequestErrors."""
        import tensorflow as tf

        function = self._functions[signature_name]
        signature = self.signatures[signature_name]
        tensors: dict[str, Any] = {}
        for key, value in inputs.items():
            spec = signature.inputs[key]
            if self.graph_decides:  # the session model casts to the graph's own dtypes
                tensors[key] = value
            else:
                tensors[key] = tf.convert_to_tensor(value, dtype=tf.dtypes.as_dtype(spec.dtype))
        try:
            result = function(**tensors)
        except (TypeError, ValueError):
            # A TF2 signature binds its declared shapes strictly (a TF1 graph lets the ops decide):
            # name the first input whose shape the declaration does not admit.
            for key, value in inputs.items():
                spec = signature.inputs[key]
                if not spec.accepts_shape(np.shape(value)):
                    shape = "[" + ",".join(str(d) for d in np.shape(value)) + "]"
                    raise RequestError.invalid(f"input `{key}` expects {spec.describe()}, got shape {shape}") from None
            raise RequestError.invalid(
                f"the inputs do not match signature `{signature_name}`, which expects {signature.describe_inputs()}"
            ) from None
        except tf.errors.OpError as error:
            raise as_request_error(error) from None
        if not isinstance(result, dict):
            result = {"output_0": result}
        # A ragged or sparse output (no tensor name in its TensorInfo) is never answered, as in the
        # Session runner: only an output_filter without it lets such a signature run.
        composite = {key for key, spec in signature.outputs.items() if not spec.tensor_name}
        return {
            key: value.numpy() if hasattr(value, "numpy") else np.asarray(value)
            for key, value in result.items()
            if key not in composite
        }

    def unload(self) -> None:
        """Mark this version retired. Its graph is freed once nothing references it.

        Requests that resolved this version before it was retired (running, or queued in the
        batcher) still hold the servable and finish on it, so retiring never fails a request;
        the registry drops its own reference and runs gc once after a round of unloads.
        """
        self.unloaded = True


def load_servable(*, name: str, version: int, path: Path, tags: tuple[str, ...] = ("serve",)) -> Servable:
    """Load one version directory; raises ServeError with the loader's message on failure."""
    import tensorflow as tf
    from tensorflow_serving.apis import get_model_metadata_pb2

    # Copy the map out so the rest of the (possibly large) graph proto can be freed.
    signature_defs = get_model_metadata_pb2.SignatureDefMap()
    for key, definition in read_signature_defs(path).items():
        signature_defs.signature_def[key].CopyFrom(definition)
    loaded: Any
    if not (path / "variables" / "variables.index").is_file():
        # No checkpoint to restore: TF Serving loads such a model (frozen graphs, conversions,
        # copies that lost the empty variables/ directory) by skipping the restore.
        try:
            loaded = _SessionModel(path, signature_defs, tags=tags, restore=False)
        except Exception as error:  # any TF error type is a failed load
            text = str(error).strip()
            raise ServeError(
                f"failed to load SavedModel {path} (it has no variables/): "
                f"{text.splitlines()[0] if text else type(error).__name__}"
            ) from None
        return _servable(name=name, version=version, path=path, loaded=loaded, signature_defs=signature_defs)
    try:
        loaded = tf.saved_model.load(str(path), tags=list(tags))
    except Exception as error:  # TF raises many types for a corrupt or partial SavedModel
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        # Only a TF1 graph (no object graph) gets the session loader; a broken TF2 model keeps
        # its own, more useful, error.
        if not _is_tf1_saved_model(path):
            raise ServeError(f"failed to load SavedModel {path}: {first_line}") from None
        try:
            loaded = _SessionModel(path, signature_defs, tags=tags)
        except Exception as session_error:  # same: any TF error type is a failed load
            text = str(session_error).strip()
            second = text.splitlines()[0] if text else type(session_error).__name__
            raise ServeError(f"failed to load SavedModel {path}: {first_line}; as a TF1 graph: {second}") from None
    return _servable(name=name, version=version, path=path, loaded=loaded, signature_defs=signature_defs)


def _servable(*, name: str, version: int, path: Path, loaded: Any, signature_defs: Any) -> Servable:
    """The Servable over a loaded model: its serving signatures as their SignatureDefs declare them."""
    # Here, not at the top: tfpilot.data's package imports TensorFlow, which importing serve must not.
    from tfpilot.data.names import keyword_aliases

    aliases = _input_aliases(path)
    signatures: dict[str, SignatureInfo] = {}
    for key in loaded.signatures.keys():
        if key in _INTERNAL_SIGNATURES or key not in signature_defs.signature_def:
            continue
        definition = signature_defs.signature_def[key]
        signatures[key] = SignatureInfo(
            name=key,
            method_name=definition.method_name or PREDICT_METHOD,
            inputs={k: _spec_from_proto(k, v) for k, v in definition.inputs.items()},
            outputs={k: _spec_from_proto(k, v) for k, v in definition.outputs.items()},
            aliases={
                **keyword_aliases(list(definition.inputs)),
                **{name: k for name, k in aliases.items() if k in definition.inputs and name not in definition.inputs},
            },
        )
    if not signatures:
        raise ServeError(
            f"SavedModel {path} has no serving signatures; export it with a signature "
            "(keras: ExportArchive.add_endpoint; tf.saved_model.save(..., signatures=...))"
        )
    return Servable(
        name=name,
        version=version,
        path=path,
        loaded=loaded,
        signature_defs=signature_defs,
        signatures=signatures,
        input_aliases=aliases,
    )


def _input_aliases(version_dir: Path) -> dict[str, str]:
    """`input_aliases` of tfpilot's contract.json, when the version has one (plain JSON, never code)."""
    import json

    path = version_dir / "contract.json"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    aliases = document.get("input_aliases") if isinstance(document, dict) else None
    if not isinstance(aliases, dict):
        return {}
    return {str(name): str(key) for name, key in aliases.items() if isinstance(key, str)}


def _is_tf1_saved_model(path: Path) -> bool:
    """True when the SavedModel has no TF2 object graph (it was written by TF1's builder)."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString((path / "saved_model.pb").read_bytes())
    except (OSError, ValueError):
        return False
    return not any(graph.HasField("object_graph_def") for graph in proto.meta_graphs)


class _SessionModel:
    """A TF1 SavedModel run as TF Serving runs it: a Session feeding and fetching tensor names.

    ``signatures[key](**arrays)`` returns numpy arrays keyed by output name, like a TF2
    signature function. Session.run is thread-safe, and the session keeps variable state
    between calls (saved_model_counter's ``incr_counter`` counts across requests). The graph
    decides shapes: feeds are not checked against the declared ones.
    """

    def __init__(
        self, path: Path, signature_defs: Any, *, tags: tuple[str, ...] = ("serve",), restore: bool = True
    ) -> None:
        import tensorflow as tf

        from tfpilot._tf_private import load_graph_without_variables

        self._graph = tf.Graph()
        self._session = tf.compat.v1.Session(graph=self._graph)
        with self._graph.as_default():
            if restore:
                tf.compat.v1.saved_model.loader.load(self._session, list(tags), str(path))
            else:
                load_graph_without_variables(self._session, list(tags), str(path))
        self.signatures: dict[str, Any] = {}
        for key, definition in signature_defs.signature_def.items():
            if key in _INTERNAL_SIGNATURES:
                continue
            self.signatures[key] = self._runner(definition)

    def _runner(self, definition: Any) -> Any:
        from tensorflow.core.protobuf import config_pb2

        feed_keys = sorted(definition.inputs)
        # A sparse or composite TensorInfo has no tensor name: TF Serving loads the model and only
        # the requests that feed or fetch it fail, with the Session's words (the service refuses
        # them before a run). The other outputs stay fetchable through output_filter.
        if any(not definition.inputs[k].name for k in feed_keys):

            def refuse(**arrays: np.ndarray) -> dict[str, np.ndarray]:
                raise RequestError.invalid(
                    "Tensor :0, specified in either feed_devices or fetch_devices was not found in the Graph"
                )

            return refuse
        fetch_keys = sorted(k for k in definition.outputs if definition.outputs[k].name)
        feeds = [self._graph.get_tensor_by_name(definition.inputs[k].name) for k in feed_keys]
        options = config_pb2.CallableOptions()
        options.feed.extend(tensor.name for tensor in feeds)
        options.fetch.extend(definition.outputs[k].name for k in fetch_keys)
        # The graph's own dtypes, not the SignatureDef's: half_plus_three declares its
        # tf.Example input as DT_FLOAT while the tensor is a string, and TF Serving feeds the
        # graph. A callable made from options does not repeat Session.run's Python-side check of
        # feed shapes against the placeholders (TF Serving lets the kernels decide), which is
        # why the private constructor is used rather than Session.make_callable.
        dtypes = [tensor.dtype.as_numpy_dtype for tensor in feeds]
        call = _tf_private.session_callable(self._session, options)

        def run(**arrays: np.ndarray) -> dict[str, np.ndarray]:
            missing = [k for k in feed_keys if k not in arrays]
            if missing:
                # Same exception type a TF2 signature raises, so Servable.run words it the same.
                raise TypeError(f"missing inputs {missing}")
            values = call(*(np.asarray(arrays[k], dtype=d) for k, d in zip(feed_keys, dtypes, strict=True)))
            return dict(zip(fetch_keys, values, strict=True))

        return run

    def close(self) -> None:
        self._session.close()
