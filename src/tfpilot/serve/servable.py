"""One loaded SavedModel version: its signatures (as TF Serving describes them) and a runner.

Metadata comes from the SavedModel proto itself (saved_model.pb), as TF Serving reads it, so
signature_def JSON, tensor names and method_name (predict / classify / regress) match what a
TF Serving client expects. Inference calls ``loaded.signatures[name]``, which works for any
TF2 SavedModel and for TF1 SavedModels too.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.errors import ServeError
from tfpilot.serve.status import Code, RequestError

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

    def describe_inputs(self) -> str:
        return ", ".join(f"`{key}` {spec.describe()}" for key, spec in sorted(self.inputs.items()))


def read_signature_defs(version_dir: Path) -> dict[str, Any]:
    """The serving meta graph's SignatureDef map (export's reader; errors as ServeError here)."""
    from tfpilot.errors import ExportError
    from tfpilot.export.method_names import read_signature_defs as read_definitions

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
    ) -> None:
        self.name = name
        self.version = version
        self.path = path
        self.signature_defs = signature_defs  # tensorflow.serving.SignatureDefMap, for metadata
        self.signatures = signatures
        self._loaded = loaded
        self._functions = {key: loaded.signatures[key] for key in signatures}
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

    def run(self, signature_name: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Call one signature with already-validated arrays; TF errors become RequestErrors."""
        import tensorflow as tf

        function = self._functions[signature_name]
        signature = self.signatures[signature_name]
        tensors = {}
        for key, value in inputs.items():
            spec = signature.inputs[key]
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
            code = next((c for c in Code if c.number == error.error_code), Code.UNKNOWN)
            message = str(error.message).split("\n\t [[")[0].strip()
            raise RequestError(code, message) from None
        if not isinstance(result, dict):
            result = {"output_0": result}
        return {key: value.numpy() for key, value in result.items()}

    def unload(self) -> None:
        """Mark this version retired. Its graph is freed once nothing references it.

        Requests that resolved this version before it was retired (running, or queued in the
        batcher) still hold the servable and finish on it, so retiring never fails a request;
        the registry drops its own reference and runs gc once after a round of unloads.
        """
        self.unloaded = True


def load_servable(*, name: str, version: int, path: Path) -> Servable:
    """Load one version directory; raises ServeError with the loader's message on failure."""
    import tensorflow as tf
    from tensorflow_serving.apis import get_model_metadata_pb2

    # Copy the map out so the rest of the (possibly large) graph proto can be freed.
    signature_defs = get_model_metadata_pb2.SignatureDefMap()
    for key, definition in read_signature_defs(path).items():
        signature_defs.signature_def[key].CopyFrom(definition)
    try:
        loaded = tf.saved_model.load(str(path), tags=["serve"])
    except Exception as error:  # TF raises many types for a corrupt or partial SavedModel
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ServeError(f"failed to load SavedModel {path}: {first_line}") from None
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
        )
    if not signatures:
        raise ServeError(
            f"SavedModel {path} has no serving signatures; export it with a signature "
            "(keras: ExportArchive.add_endpoint; tf.saved_model.save(..., signatures=...))"
        )
    return Servable(
        name=name, version=version, path=path, loaded=loaded, signature_defs=signature_defs, signatures=signatures
    )
