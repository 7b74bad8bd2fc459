"""TFLite variants run in ai_edge_litert and match the SavedModel; violations become findings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tfpilot._tf_private import onednn_enabled
from tfpilot.errors import ExportError
from tfpilot.export import PARITY_CODE, convert_tflite, export_saved_model
from tfpilot.export.formats import ExportParityError, export_formats
from tfpilot.export.parity import TFLiteRunner
from tfpilot.export.roundoff import ROUNDOFF_CODE
from tfpilot.findings import read_findings
from tfpilot.workflow import sample_features

ROW_KEYS = {
    "format",
    "path",
    "size_bytes",
    "accuracy",
    "saved_model_accuracy",
    "accuracy_drop",
    "argmax_agreement",
    "max_abs_diff",
    "latency_ms_p50",
}


def _saved_model(trained):
    return export_saved_model(
        model=trained.model,
        preprocessor=trained.pipeline.preprocessor,
        class_names=trained.pipeline.class_names,
        base_path=trained.run.model_base,
        sample_features=sample_features(trained),
        post_write_context={"trained": trained},
    ).path


def test_all_variants_match_the_saved_model(trained):
    summary = export_formats(
        trained,
        formats=["tflite", "tflite-dynamic", "tflite-int8", "tflite-fp16"],
        saved_model_path=_saved_model(trained),
    )
    rows = json.loads(trained.run.parity_path.read_text())
    assert [r["format"] for r in rows] == ["saved_model", "tflite", "tflite-dynamic", "tflite-int8", "tflite-fp16"]
    assert rows == json.loads(json.dumps(summary["parity"]))
    for row in rows:
        assert ROW_KEYS <= set(row)
        assert row["argmax_agreement"] >= 0.99 and row["accuracy_drop"] <= 0.01, row
        assert row["latency_ms_p50"] > 0
    by_format = {r["format"]: r for r in rows}
    assert by_format["tflite"]["max_abs_diff"] < 1e-4
    assert by_format["tflite-int8"]["size_bytes"] < by_format["tflite"]["size_bytes"]
    runner = TFLiteRunner(by_format["tflite-int8"]["path"])
    assert runner.input_dtype == np.int8  # full-integer file: int8 in, int8 out
    # A float32 file that differs at all while oneDNN's kernels are on gets the round-off note (info: it passed).
    noted = bool(onednn_enabled()) and by_format["tflite"]["max_abs_diff"] > 0
    assert [(f.code, f.severity.value) for f in summary["findings"]] == ([(ROUNDOFF_CODE, "info")] if noted else [])
    assert [f.code for f in read_findings(trained.run.findings_path)] == ([ROUNDOFF_CODE] if noted else [])


def test_parity_violation_writes_finding_and_raises(tmp_path, make_trained_run):
    trained = make_trained_run(tmp_path, name="tied")
    # Identical logit columns except a bias far below int8 resolution: float always says class 1,
    # int8 sees a tie and says class 0, so agreement is 0 whatever the calibration data.
    kernel, bias = trained.model.get_layer("logits").get_weights()
    kernel[:] = kernel[:, :1] * 5.0
    bias[:] = 0.0
    bias[1] = 1e-4
    trained.model.get_layer("logits").set_weights([kernel, bias])
    with pytest.raises(ExportParityError) as caught:
        export_formats(trained, formats=["tflite-int8"], saved_model_path=_saved_model(trained))
    assert caught.value.exit_code == 1
    findings = read_findings(trained.run.findings_path)
    assert [f.code for f in findings] == [PARITY_CODE]
    assert "argmax agreement" in findings[0].message
    rows = json.loads(trained.run.parity_path.read_text())
    assert rows[1]["argmax_agreement"] < 0.99


def test_string_ops_are_refused_with_flex_explanation():
    import keras
    import tensorflow as tf

    class AsString(keras.layers.Layer):
        def call(self, inputs):
            return tf.strings.to_number(tf.strings.as_string(inputs))

    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(AsString()(inputs)))
    with pytest.raises(ExportError, match="Flex delegate"):
        convert_tflite(model, variant="tflite", input_shape=(3,))
