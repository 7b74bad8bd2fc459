"""What REST and gRPC share: one request wrapper, resolve a servable, check the inputs, batch,
run, log.

The front ends only translate their wire format to arrays (and back) and render the
RequestError a :class:`Call` leaves; every rule about signatures, input checks, status codes,
metrics, classification/regression outputs and request logging lives here once.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from tfpilot.serve.batching import Batcher
from tfpilot.serve.metrics import ServerMetrics
from tfpilot.serve.protocol import encode_tensor
from tfpilot.serve.registry import ModelRegistry
from tfpilot.serve.request_log import RequestLog
from tfpilot.serve.servable import CLASSIFY_METHOD, REGRESS_METHOD, Servable, SignatureInfo
from tfpilot.serve.status import Code, RequestError, as_request_error

__all__ = ["InferenceService", "Call", "TaskResult"]

_UNKNOWN_MODEL = "_unknown"


class Call:
    """The one wrapper around every REST and gRPC request: times it, turns whatever it raises
    into a RequestError (:func:`as_request_error`) and records the metrics once, by status.

    Used as ``async with service.call(...) as call:``; an Exception raised inside is swallowed
    and left in ``call.error`` for the front end to render (a JSON ``{"error": ...}`` with the
    code's HTTP status, or a gRPC status). Cancellation (the client went away) is recorded as
    CANCELLED and propagates.
    """

    __slots__ = ("_service", "api", "protocol", "model", "status", "error", "_start")

    def __init__(self, service: InferenceService, *, api: str, protocol: str, model: str) -> None:
        self._service = service
        self.api = api
        self.protocol = protocol
        # Only configured names become label values: clients choose URLs, and unbounded label
        # values would grow the metrics without limit.
        self.model = model if service.registry.has_model(model) else _UNKNOWN_MODEL
        self.status = Code.OK
        self.error: RequestError | None = None
        self._start = time.perf_counter()

    async def __aenter__(self) -> Call:
        return self

    async def __aexit__(self, kind: Any, error: BaseException | None, traceback: Any) -> bool:
        handled = False
        if isinstance(error, Exception):
            self.error = as_request_error(error, where=f"{self.protocol} {self.api} for model {self.model}")
            self.status = self.error.code
            handled = True
        elif error is not None:  # CancelledError, GeneratorExit: the client went away
            self.status = Code.CANCELLED
        self._service.metrics.observe_request(
            model=self.model,
            api=self.api,
            protocol=self.protocol,
            status=self.status.name,
            seconds=time.perf_counter() - self._start,
        )
        return handled


@dataclasses.dataclass(frozen=True)
class TaskResult:
    """One MultiInference task's answer: classifications or regressions, never both."""

    signature: SignatureInfo
    classifications: list[list[tuple[str, float]]] | None = None
    regressions: list[float] | None = None


class InferenceService:
    def __init__(
        self,
        *,
        registry: ModelRegistry,
        batcher: Batcher,
        metrics: ServerMetrics,
        request_log: RequestLog | None = None,
        method_name_check: bool = False,
    ) -> None:
        self.method_name_check = method_name_check
        self.registry = registry
        self.batcher = batcher
        self.metrics = metrics
        self.request_log = request_log

    def call(self, *, api: str, protocol: str, model: str) -> Call:
        """The wrapper (timing, error mapping, metrics) for one request; see :class:`Call`."""
        return Call(self, api=api, protocol=protocol, model=model)

    def resolve(self, model: str, *, version: int | None = None, label: str | None = None) -> Servable:
        return self.registry.resolve(model, version=version, label=label)

    async def predict(
        self,
        servable: Servable,
        signature: SignatureInfo,
        inputs: dict[str, np.ndarray],
        *,
        timeout: float | None,
        examples: bool = False,
        output_filter: Sequence[str] = (),
    ) -> dict[str, np.ndarray]:
        """Run a signature on decoded inputs. Predict inputs (``examples`` False) go through the
        one input check here, whichever front end decoded them; serialized tf.Examples are the
        graph's to parse (a TF1 graph may declare them as another dtype)."""
        if not examples:
            inputs = signature.check_inputs(signature.canonical(inputs))
            # A TF1 SparseTensor input (coo_sparse TensorInfo) has no tensor name either: TF
            # Serving feeds the request tensor under the empty name, which the Session refuses
            # exactly as it refuses an empty fetch (below).
            for key in sorted(signature.inputs):
                if not signature.inputs[key].tensor_name:
                    raise RequestError.invalid(
                        "Tensor :0, specified in either feed_devices or fetch_devices was not found in the Graph; "
                        f"input `{key}` of signature `{signature.name}` is a sparse tensor (its indices, values "
                        "and dense shape are separate graph tensors), which no request can feed"
                    )
        # In request order, as TF Serving's PreProcessPrediction checks them (predict_util.cc).
        seen: set[str] = set()
        for key in output_filter:
            if key not in signature.outputs:
                raise RequestError.invalid(
                    f"output tensor alias not found in signature: {key} Outputs expected to be in the set "
                    f"{{{','.join(sorted(signature.outputs))}}}."
                )
            if key in seen:
                raise RequestError.invalid(f"duplicate output tensor alias: {key}")
            seen.add(key)
        # A ragged or sparse output is a composite TensorInfo without a tensor name: TF Serving's
        # RunPredict fetches that empty name and the Session refuses `:0` (TensorFlow's
        # graph_execution_state.cc, ValidateFeedAndFetchDevices), unless output_filter leaves it out.
        for key in output_filter or sorted(signature.outputs):
            if not signature.outputs[key].tensor_name:
                raise RequestError.invalid(
                    "Tensor :0, specified in either feed_devices or fetch_devices was not found in the Graph; "
                    f"output `{key}` of signature `{signature.name}` is a composite (ragged or sparse) tensor, "
                    "which has no tensor to fetch"
                )
        outputs = await self.batcher.run(servable, signature.name, inputs, timeout=timeout)
        if self.request_log is not None:
            self.request_log.record(
                model=servable.name,
                version=servable.version,
                signature=signature.name,
                inputs=inputs,
                outputs=outputs,
                examples=examples,
            )
        return outputs

    # ------------------------------------------------------------------ classification

    async def classify(
        self, servable: Servable, signature_name: str, examples: list[bytes], *, timeout: float | None
    ) -> tuple[SignatureInfo, list[list[tuple[str, float]]]]:
        signature = _example_signature(
            servable, signature_name, CLASSIFY_METHOD, "classification", check_method=self.method_name_check
        )
        inputs = {"inputs": _string_batch(examples)}
        self.metrics.observe_examples(servable.name, len(examples))
        outputs = await self.predict(servable, signature, inputs, timeout=timeout, examples=True)
        return signature, classification_results(outputs, len(examples))

    async def regress(
        self, servable: Servable, signature_name: str, examples: list[bytes], *, timeout: float | None
    ) -> tuple[SignatureInfo, list[float]]:
        signature = _example_signature(
            servable, signature_name, REGRESS_METHOD, "regression", check_method=self.method_name_check
        )
        inputs = {"inputs": _string_batch(examples)}
        self.metrics.observe_examples(servable.name, len(examples))
        outputs = await self.predict(servable, signature, inputs, timeout=timeout, examples=True)
        return signature, regression_results(outputs, len(examples))

    async def multi_inference(
        self, servable: Servable, tasks: list[tuple[str, str]], examples: list[bytes], *, timeout: float | None
    ) -> list[TaskResult]:
        """(signature name, method name) tasks over one model version and one set of examples."""
        seen: set[str] = set()
        for signature_name, method in tasks:
            resolved = signature_name or "serving_default"
            if resolved in seen:
                raise RequestError.invalid(f"Duplicate evaluation of signature: {resolved}")
            seen.add(resolved)
            if method not in (CLASSIFY_METHOD, REGRESS_METHOD):
                raise RequestError.invalid(f"Unsupported signature method_name: {method}")
        results = []
        for signature_name, method in tasks:
            if method == CLASSIFY_METHOD:
                signature, rows = await self.classify(servable, signature_name, examples, timeout=timeout)
                results.append(TaskResult(signature, classifications=rows))
            else:
                signature, values = await self.regress(servable, signature_name, examples, timeout=timeout)
                results.append(TaskResult(signature, regressions=values))
        return results


def _string_batch(examples: list[bytes]) -> np.ndarray:
    array = np.empty(len(examples), dtype=object)
    array[:] = examples
    return array


def _example_signature(servable: Servable, name: str, method: str, kind: str, *, check_method: bool) -> SignatureInfo:
    signature = servable.signature(name)
    if check_method and signature.method_name != method:
        # TF Serving's words exactly (classifier.cc, regressor.cc).
        raise RequestError.invalid(
            f"Expected {kind} signature method_name to be {method}. Was: {signature.method_name}"
        )
    # TF Serving's checks in its order and words (classifier.cc PreProcessClassification,
    # regressor.cc PreProcessRegression), whatever the signature's method; where TF Serving
    # appends the SignatureDef's DebugString, tfpilot names the signature's inputs or outputs.
    where = f"Signature `{signature.name}`"
    outputs = ", ".join(f"`{key}`" for key in sorted(signature.outputs)) or "none"
    if len(signature.inputs) != 1:
        raise RequestError.invalid(f"Expected one input Tensor. {where} has {signature.describe_inputs() or 'none'}")
    if method == CLASSIFY_METHOD and len(signature.outputs) not in (1, 2):
        raise RequestError.invalid(
            f"Expected one or two output Tensors, found {len(signature.outputs)}. {where} has outputs {outputs}"
        )
    if method == REGRESS_METHOD and len(signature.outputs) != 1:
        raise RequestError.invalid(f"Expected one output Tensor. {where} has outputs {outputs}")
    spec = signature.inputs.get("inputs")
    if spec is None:
        raise RequestError.invalid(
            f"No {kind} inputs found in SignatureDef: signature `{signature.name}` takes "
            f"{signature.describe_inputs()}, not `inputs` (serialized tf.Example strings)"
        )
    if method == CLASSIFY_METHOD and "classes" not in signature.outputs and "scores" not in signature.outputs:
        raise RequestError.invalid(
            'Expected classification signature outputs to contain at least one of "classes" or "scores". '
            f"{where} has outputs {outputs}"
        )
    if method == REGRESS_METHOD and "outputs" not in signature.outputs:
        raise RequestError.invalid(
            f"No regression outputs found in SignatureDef: signature `{signature.name}` has outputs {outputs}, "
            "not `outputs`"
        )
    if spec.dtype != "string" and not servable.graph_decides:
        raise RequestError.invalid(
            f"{kind} signature `{signature.name}` input `inputs` must be string (serialized tf.Example), "
            f"got {spec.describe()}"
        )
    return signature


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def classification_results(outputs: dict[str, np.ndarray], batch_size: int) -> list[list[tuple[str, float]]]:
    classes, scores = outputs.get("classes"), outputs.get("scores")
    num_classes = None
    for name, array in (("classes", classes), ("scores", scores)):
        if array is None:
            continue
        if array.ndim != 2 or array.shape[0] != batch_size:
            shape = "[" + ",".join(str(d) for d in array.shape) + "]"
            raise RequestError(
                Code.INVALID_ARGUMENT,
                f"Expected Tensor shape: [batch_size num_classes] = [{batch_size} ?] for output `{name}` but got {shape}",
            )
        if num_classes is not None and array.shape[1] != num_classes:
            raise RequestError.invalid(
                f"Tensors class and score should match in num_classes: {num_classes} vs. {array.shape[1]}"
            )
        num_classes = array.shape[1]
    results = []
    score_values = encode_tensor(scores) if scores is not None else None
    for row in range(batch_size):
        entries = []
        for column in range(num_classes or 0):
            label = _text(classes[row, column]) if classes is not None else ""
            score = float(score_values[row][column]) if score_values is not None else 0.0
            entries.append((label, score))
        results.append(entries)
    return results


def regression_results(outputs: dict[str, np.ndarray], batch_size: int) -> list[float]:
    values = outputs["outputs"]
    if values.shape not in ((batch_size,), (batch_size, 1)):
        shape = "[" + ",".join(str(d) for d in values.shape) + "]"
        raise RequestError.invalid(
            f"Expected output Tensor shape to be either [batch_size] or [batch_size, 1] but got {shape}"
        )
    return [float(v) for v in encode_tensor(values.reshape(-1))]
