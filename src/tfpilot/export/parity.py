"""Parity: does each exported file give the SavedModel's answers, and how fast at batch 1?

Every TFLite file runs in ai_edge_litert's interpreter (tf.lite.Interpreter is deprecated) on the
test split. The SavedModel, reloaded from disk and fed raw features, is the reference: accuracy,
argmax agreement and the largest absolute difference of class probabilities are measured
against it. Latency is the median of single-example calls after a warmup.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.findings import Finding, Severity
from tfpilot.savedmodel.signature_call import SignatureCaller

__all__ = [
    "PARITY_CODE",
    "TFLiteRunner",
    "SavedModelRunner",
    "median_latency_ms",
    "parity_row",
    "check_parity",
    "softmax",
]

PARITY_CODE = "EXPORT-PARITY"
LATENCY_RUNS = 200
LATENCY_WARMUP = 10


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)


def median_latency_ms(call: Callable[[], Any], *, runs: int = LATENCY_RUNS, warmup: int = LATENCY_WARMUP) -> float:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000.0


class TFLiteRunner:
    """A .tflite file in ai_edge_litert's interpreter; quantizes int8 inputs and dequantizes outputs."""

    def __init__(self, path: str | Path) -> None:
        from ai_edge_litert.interpreter import Interpreter

        self.path = Path(path)
        self._interpreter = Interpreter(model_path=str(self.path))
        self._input = self._interpreter.get_input_details()[0]
        self._output = self._interpreter.get_output_details()[0]
        self._batch = -1

    @property
    def input_dtype(self) -> np.dtype:
        return np.dtype(self._input["dtype"])

    def _resize(self, batch: int) -> None:
        if batch != self._batch:
            self._interpreter.resize_tensor_input(self._input["index"], [batch, *self._input["shape_signature"][1:]])
            self._interpreter.allocate_tensors()
            self._input = self._interpreter.get_input_details()[0]
            self._output = self._interpreter.get_output_details()[0]
            self._batch = batch

    def _quantize(self, features: np.ndarray) -> np.ndarray:
        dtype = self.input_dtype
        if dtype in (np.int8, np.uint8):
            scale, zero_point = self._input["quantization"]
            info = np.iinfo(dtype)
            return np.clip(np.round(features / scale + zero_point), info.min, info.max).astype(dtype)
        return features.astype(dtype)

    def logits(self, features: np.ndarray, *, batch_size: int = 256) -> np.ndarray:
        outputs = []
        for start in range(0, len(features), batch_size):
            chunk = features[start : start + batch_size]
            self._resize(len(chunk))
            self._interpreter.set_tensor(self._input["index"], self._quantize(chunk))
            self._interpreter.invoke()
            out = self._interpreter.get_tensor(self._output["index"])
            if out.dtype in (np.int8, np.uint8):
                scale, zero_point = self._output["quantization"]
                out = (out.astype(np.float32) - zero_point) * scale
            outputs.append(np.asarray(out, np.float32))
        return np.concatenate(outputs)

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        return softmax(self.logits(features))

    def latency_ms(self, example: np.ndarray, *, runs: int = LATENCY_RUNS) -> float:
        self._resize(1)
        quantized = self._quantize(example[:1])

        def call() -> None:
            self._interpreter.set_tensor(self._input["index"], quantized)
            self._interpreter.invoke()
            self._interpreter.get_tensor(self._output["index"])

        return median_latency_ms(call, runs=runs)


class SavedModelRunner:
    """The reference: a SavedModel version reloaded from disk, serving_default on raw features."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        caller = SignatureCaller.load(self.path)
        if caller is None:
            # tfpilot's exports always have it; the KeyError is what a missing signature raised before.
            raise KeyError(f"SavedModel `{self.path}` has no serving_default signature")
        self._caller = caller
        self._serve = caller.function

    def probabilities(self, features: dict[str, np.ndarray], *, batch_size: int = 256) -> np.ndarray:
        return self._caller(features, batch_size=batch_size)["probabilities"]

    def latency_ms(self, features: dict[str, np.ndarray], *, runs: int = LATENCY_RUNS) -> float:
        import tensorflow as tf

        single = {name: tf.constant(value[:1]) for name, value in features.items()}
        return median_latency_ms(lambda: self._serve(**single), runs=runs)


def directory_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def parity_row(
    *,
    format: str,
    path: Path,
    probabilities: np.ndarray,
    reference: np.ndarray,
    labels: np.ndarray,
    latency_ms_p50: float,
    size_bytes: int | None = None,
) -> dict[str, Any]:
    """One parity.json row (schema in docs/export.md)."""
    accuracy = float(np.mean(probabilities.argmax(-1) == labels))
    reference_accuracy = float(np.mean(reference.argmax(-1) == labels))
    return {
        "format": format,
        "path": str(path),
        "size_bytes": int(size_bytes if size_bytes is not None else directory_size(Path(path))),
        "accuracy": accuracy,
        "saved_model_accuracy": reference_accuracy,
        "accuracy_drop": reference_accuracy - accuracy,
        "argmax_agreement": float(np.mean(probabilities.argmax(-1) == reference.argmax(-1))),
        "max_abs_diff": float(np.max(np.abs(probabilities - reference))),
        "latency_ms_p50": float(latency_ms_p50),
        "examples": int(labels.shape[0]),
    }


def check_parity(
    rows: list[dict[str, Any]], *, max_accuracy_drop: float, min_argmax_agreement: float, location: str = ""
) -> list[Finding]:
    """EXPORT-PARITY error findings for rows outside the configured thresholds."""
    findings = []
    for row in rows:
        if row["format"] == "saved_model":
            continue
        broken = []
        if row["accuracy_drop"] > max_accuracy_drop + 1e-12:
            broken.append(f"accuracy drop {row['accuracy_drop']:.4f} > {max_accuracy_drop}")
        if row["argmax_agreement"] < min_argmax_agreement - 1e-12:
            broken.append(f"argmax agreement {row['argmax_agreement']:.4f} < {min_argmax_agreement}")
        if broken:
            findings.append(
                Finding(
                    code=PARITY_CODE,
                    severity=Severity.ERROR,
                    title=f"{row['format']} does not match the SavedModel",
                    message=f"{row['format']} ({row['path']}): "
                    + "; ".join(broken)
                    + f" on {row['examples']} test examples",
                    location=location or row["path"],
                    evidence={
                        "format": row["format"],
                        **{
                            k: row[k]
                            for k in (
                                "accuracy",
                                "saved_model_accuracy",
                                "accuracy_drop",
                                "argmax_agreement",
                                "max_abs_diff",
                            )
                        },
                    },
                    fix=(
                        "for tflite-int8 raise export.representative_batches or use tflite-dynamic/tflite-fp16; "
                        "or relax export.parity.max_accuracy_drop / min_argmax_agreement if the loss is acceptable"
                    ),
                )
            )
    return findings
