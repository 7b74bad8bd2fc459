"""Canonical op types, so rules and tables read the same on every CPU.

oneDNN (on by default on x86) and grappler rename ops in the graph that actually runs: a MatMul
shows up in a profile as `_MklMatMul`, `_MklNativeFusedMatMul` or `_FusedMatMul` depending on the
machine's instruction set and the fusions grappler found. A rule or table that matches op types
by name must see one name for all of them; the raw type is kept beside it as evidence.
"""

from __future__ import annotations

__all__ = ["canonical_op_type"]

# Fused kernels named after their leading op (grappler's remapper and oneDNN's fusions).
_FUSED = {
    "_FusedMatMul": "MatMul",
    "_FusedConv2D": "Conv2D",
    "_FusedConv3D": "Conv3D",
    "_FusedDepthwiseConv2dNative": "DepthwiseConv2dNative",
    "_FusedBatchMatMulV2": "BatchMatMulV2",
    "_FusedBatchNormEx": "FusedBatchNormV3",
    "_MklLayerNorm": "LayerNorm",
    "_MklFusedBatchMatMulV2": "BatchMatMulV2",
    "_MklFusedMish": "Mish",
    "_MklSwish": "Swish",
}
# oneDNN prefixes, longest first so `_MklNativeFused` is not read as `_Mkl` + `NativeFused...`.
_PREFIXES = ("_MklNativeFused", "_MklFused", "_MklNative", "_MklQuantized", "_Mkl")


def canonical_op_type(raw: str) -> str:
    """`_MklNativeFusedMatMul` -> `MatMul`, `_FusedConv2D` -> `Conv2D`; unknown names unchanged."""
    name = str(raw)
    if name in _FUSED:
        return _FUSED[name]
    for prefix in _PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            stripped = name[len(prefix) :]
            return _FUSED.get(f"_Fused{stripped}", stripped)
    return name
