"""oneDNN and grappler renames map to one canonical op type; the raw type is kept."""

from __future__ import annotations

import pytest

from tfpilot.diagnose.op_types import canonical_op_type
from tfpilot.diagnose.xplane import _op_stats


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("_MklMatMul", "MatMul"),
        ("_MklNativeMatMul", "MatMul"),
        ("_MklNativeFusedMatMul", "MatMul"),
        ("_MklFusedMatMul", "MatMul"),
        ("_FusedMatMul", "MatMul"),
        ("MatMul", "MatMul"),
        ("_MklConv2D", "Conv2D"),
        ("_MklNativeConv2D", "Conv2D"),
        ("_FusedConv2D", "Conv2D"),
        ("_MklNativeFusedConv2D", "Conv2D"),
        ("_MklNativeBatchMatMulV2", "BatchMatMulV2"),
        ("_MklBatchMatMulV2", "BatchMatMulV2"),
        ("_MklSoftmax", "Softmax"),
        ("EagerPyFunc", "EagerPyFunc"),
        ("IteratorGetNext", "IteratorGetNext"),
        ("_Mkl", "_Mkl"),  # a bare prefix is not an op name to strip
    ],
)
def test_canonical_op_type(raw: str, canonical: str) -> None:
    assert canonical_op_type(raw) == canonical


def test_op_table_rows_carry_canonical_and_raw_types() -> None:
    # The shape xprof's framework_op_stats gviz table has (second table: IDLE excluded).
    table = {
        "cols": [
            {"id": "operation"},
            {"id": "type"},
            {"id": "host_or_device"},
            {"id": "occurrences"},
            {"id": "total_self_time"},
            {"id": "avg_self_time"},
            {"id": "host_total_self_time_percent"},
            {"id": "eager"},
        ],
        "rows": [
            {
                "c": [
                    {"v": "dense/MatMul"},
                    {"v": "_MklNativeFusedMatMul"},
                    {"v": "Host"},
                    {"v": 4},
                    {"v": 4000.0},
                    {"v": 1000.0},
                    {"v": 0.6},
                    {"v": "false"},
                ]
            },
            {
                "c": [
                    {"v": "dense_1/MatMul"},
                    {"v": "_MklMatMul"},
                    {"v": "Host"},
                    {"v": 4},
                    {"v": 2000.0},
                    {"v": 500.0},
                    {"v": 0.3},
                    {"v": "false"},
                ]
            },
            {
                "c": [
                    {"v": "idle"},
                    {"v": "IDLE"},
                    {"v": "Host"},
                    {"v": 1},
                    {"v": 9000.0},
                    {"v": 9000.0},
                    {"v": 0.0},
                    {"v": "false"},
                ]
            },
        ],
    }
    ops, _ = _op_stats([table])
    assert [op.type for op in ops] == ["MatMul", "MatMul"]
    assert [op.raw_type for op in ops] == ["_MklNativeFusedMatMul", "_MklMatMul"]
    assert ops[0].total_self_time_ms == pytest.approx(4.0)
