"""How closely a reloaded export must match the in-memory model.

The reloaded graph is the same computation, but grappler and oneDNN may pick other kernels and
another summation order (oneDNN on AVX-512-FP16 / AMX CPUs rewrites MatMul into `_MklMatMul`).
The difference that is honest noise therefore scales with the precision the model *computes*
in: a float32 model agrees to ~1e-6, a mixed_float16 model only to float16's last bits even
though its outputs are float32. A fixed atol of 1e-5 rejected faithful mixed-precision exports;
a tolerance derived from the compute dtype does not, and still catches a wrong graph (an error
of a missing layer or a dropped normalisation is orders of magnitude larger).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Tolerance", "tolerance_for_dtype", "tolerance_for_model"]

# Machine epsilon of each floating compute dtype Keras policies use.
_EPSILON = {
    "float64": float(np.finfo(np.float64).eps),
    "float32": float(np.finfo(np.float32).eps),
    "float16": float(np.finfo(np.float16).eps),
    "bfloat16": 2.0**-7,
}
# A few ulps of the compute dtype, accumulated over a network's depth: reordered reductions and
# fused kernels stay within ~8 ulps of the compute dtype; a wrong graph is off by far more.
_ULPS = 8.0
# A loader may differ from the model by this many times the model's own eager/traced spread.
_SPREAD_FACTOR = 4.0
# Never tighter than this: float32 probabilities after a softmax already differ by ~1e-6.
_FLOOR = 1e-5


@dataclass(frozen=True)
class Tolerance:
    """|actual - expected| <= atol + rtol * |expected|, elementwise (numpy.isclose semantics)."""

    compute_dtype: str
    atol: float
    rtol: float

    def excess(self, actual: Any, expected: Any) -> tuple[float, bool]:
        """Largest absolute difference and whether every element is within tolerance."""
        actual_array = np.asarray(actual, dtype=np.float64)
        expected_array = np.asarray(expected, dtype=np.float64)
        diff = np.abs(actual_array - expected_array)
        largest = float(np.max(diff)) if diff.size else 0.0
        within = bool(np.all(diff <= self.atol + self.rtol * np.abs(expected_array)))
        return largest, within

    spread: float = 0.0  # how far two faithful runs of the model itself were apart (widened_by)

    def describe(self) -> str:
        measured = f", the model's own eager/traced spread {self.spread:.1e} x{_SPREAD_FACTOR:g}" if self.spread else ""
        return f"atol {self.atol:.1e} + rtol {self.rtol:.1e} for {self.compute_dtype} compute{measured}"

    def widened_by(self, spread: float) -> Tolerance:
        """This tolerance, never tighter than the model's own noise: the same model run eagerly and traced (two
        faithful paths, the traced one as the loaders run it) differed by `spread`. A transformer fed raw values
        in the hundreds computes its intermediates in the thousands, and its outputs near 7 differed by 8e-5
        between the two (1e-5 relative, past the ulps bound); a loader is held to a few times that, which a wrong
        graph (a missing layer, a dropped normalisation) still exceeds by orders of magnitude."""
        if not np.isfinite(spread) or spread * _SPREAD_FACTOR <= self.atol:
            return self
        return dataclasses.replace(self, atol=spread * _SPREAD_FACTOR, spread=spread)


def tolerance_for_dtype(compute_dtype: str) -> Tolerance:
    epsilon = _EPSILON.get(str(compute_dtype), _EPSILON["float32"])
    bound = max(_FLOOR, _ULPS * epsilon)
    return Tolerance(compute_dtype=str(compute_dtype), atol=bound, rtol=bound)


def tolerance_for_model(model: Any) -> Tolerance:
    """The tolerance of the least precise compute dtype any layer of `model` uses."""
    dtypes = {str(getattr(model, "compute_dtype", "float32"))}
    for layer in getattr(model, "layers", []) or []:
        dtypes.add(str(getattr(layer, "compute_dtype", "float32")))
    known = [d for d in dtypes if d in _EPSILON] or ["float32"]
    loosest = max(known, key=lambda d: _EPSILON[d])
    return tolerance_for_dtype(loosest)
