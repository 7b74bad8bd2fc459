"""Reading SignatureDefs from saved_model.pb or .pbtxt, and rewriting method names in place."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tfpilot.errors import ExportError
from tfpilot.savedmodel.metagraph import parse_saved_model, read_signature_defs
from tfpilot.savedmodel.method_names import set_method_names


def test_signature_defs_from_binary_and_text_graphs_agree(tmp_path: Path, affine_saved_model: Path) -> None:
    from google.protobuf import text_format

    binary = read_signature_defs(affine_saved_model)
    assert set(binary["serving_default"].outputs) == {"y", "total"}
    text_copy = tmp_path / "1"
    shutil.copytree(affine_saved_model, text_copy)
    (text_copy / "saved_model.pbtxt").write_text(text_format.MessageToString(parse_saved_model(affine_saved_model)))
    (text_copy / "saved_model.pb").unlink()
    assert read_signature_defs(text_copy) == binary


def test_an_unreadable_graph_is_an_export_error(tmp_path: Path) -> None:
    (tmp_path / "saved_model.pb").write_bytes(b"\xff\xff not a proto")
    with pytest.raises(ExportError, match="does not hold a readable saved_model.pb"):
        read_signature_defs(tmp_path)


def test_method_names_are_rewritten_and_the_model_still_loads(tmp_path: Path, affine_saved_model: Path) -> None:
    import tensorflow as tf

    copy = tmp_path / "1"
    shutil.copytree(affine_saved_model, copy)
    set_method_names(copy, {"serving_default": "tensorflow/serving/regress"})
    assert read_signature_defs(copy)["serving_default"].method_name == "tensorflow/serving/regress"
    # fingerprint.pb holds a checksum of saved_model.pb: a stale one makes the loader refuse the model.
    assert "serving_default" in tf.saved_model.load(str(copy)).signatures
    with pytest.raises(ExportError, match="signature `missing` is missing"):
        set_method_names(copy, {"missing": "tensorflow/serving/classify"})
