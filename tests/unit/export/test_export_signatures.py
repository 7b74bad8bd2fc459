"""SavedModel signatures: classify/regress method names, both loaders, warmup, contract, versions."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.errors import ExportError
from tfpilot.export import (
    CLASSIFY_METHOD,
    CONTRACT_FILENAME,
    REGRESS_METHOD,
    WARMUP_PATH,
    export_saved_model,
    read_contract,
    read_signature_defs,
    read_warmup_records,
    run_with_session_loader,
    to_examples,
)
from tfpilot.workflow import export_run, sample_features


def _export(trained, base, signatures, **kwargs):
    return export_saved_model(
        model=trained.model,
        preprocessor=trained.pipeline.preprocessor,
        class_names=trained.pipeline.class_names,
        base_path=base,
        sample_features=sample_features(trained),
        signatures=signatures,
        post_write_context={"trained": trained},
        **kwargs,
    )


def test_classify_signature_runs_in_session_loader_with_tf_serving_method(trained, tmp_path):
    result = _export(trained, tmp_path / "model", ["serving_default", "logits", "classify"])
    definitions = read_signature_defs(result.path)
    assert definitions["classify"].method_name == CLASSIFY_METHOD
    assert list(definitions["classify"].inputs) == ["inputs"]
    assert set(definitions["classify"].outputs) == {"classes", "scores"}
    # The fingerprint was regenerated after the MetaGraph was patched (TF checks its checksum on load).
    assert tf.saved_model.experimental.read_fingerprint(str(result.path)).saved_model_checksum != 0

    features = sample_features(trained, count=5)
    examples = np.array(to_examples(features), dtype=object)
    classify = run_with_session_loader(result.path, {"inputs": examples}, signature="classify")
    predict = run_with_session_loader(result.path, features)
    np.testing.assert_allclose(classify["scores"], predict["probabilities"], atol=1e-6)
    assert classify["classes"].shape == (5, 3)
    assert [c.decode() for c in classify["classes"][0]] == trained.pipeline.class_names


def test_regress_is_positive_class_probability_for_binary_and_refused_otherwise(trained, binary_trained, tmp_path):
    result = _export(binary_trained, tmp_path / "binary", ["serving_default", "regress"])
    assert read_signature_defs(result.path)["regress"].method_name == REGRESS_METHOD
    features = sample_features(binary_trained, count=4)
    out = run_with_session_loader(
        result.path, {"inputs": np.array(to_examples(features), dtype=object)}, signature="regress"
    )
    probabilities = run_with_session_loader(result.path, features)["probabilities"]
    np.testing.assert_allclose(out["outputs"], probabilities[:, 1], atol=1e-6)
    with pytest.raises(ExportError, match="binary classifier"):
        _export(trained, tmp_path / "multi", ["serving_default", "regress"])
    assert not (tmp_path / "multi" / "1").exists()


def test_versions_warmup_and_contract(trained, tmp_path):
    base = tmp_path / "model"
    first = _export(trained, base, ["serving_default", "classify"])
    second = _export(trained, base, ["serving_default"], version=7)
    assert (first.version, second.version) == (1, 7)
    with pytest.raises(ExportError, match="already exists"):
        _export(trained, base, ["serving_default"], version=7)
    assert sorted(p.name for p in base.iterdir()) == ["1", "7"]  # no partial directories left behind

    records = read_warmup_records(first.path / WARMUP_PATH)
    kinds = [r.WhichOneof("log_type") for r in records]
    assert kinds == ["predict_log"] * trained.config.export.warmup_requests + ["classify_log"]
    request = records[0].predict_log.request
    assert request.model_spec.signature_name == "serving_default"
    first_validation = next(iter(trained.pipeline.raw("validation")))[0]["image"].numpy()
    np.testing.assert_array_equal(tf.make_ndarray(request.inputs["image"])[0], first_validation)

    contract = read_contract(first.path)
    assert (first.path / CONTRACT_FILENAME).exists()
    assert contract["inputs"] == {"image": {"dtype": "uint8", "shape": [-1, 4, 4, 1]}}
    assert contract["labels"] == trained.pipeline.class_names
    assert contract["signatures"]["classify"]["method_name"] == CLASSIFY_METHOD
    assert contract["training_run"]["name"] == "tiny"


def test_contract_mismatch_with_config_fails_export(trained, tmp_path):
    from tfpilot.export import check_contract

    contract = {
        "inputs": {"image": {"dtype": "uint8", "shape": [-1, 4, 4, 1]}},
        "labels": ["a", "b", "a"],
        "num_model_outputs": 2,
        "metrics": None,
        "signatures": {"serving_default": {}},
    }
    config = trained.config.model_copy(deep=True)
    config.export.signatures = ["serving_default", "classify"]
    problems = check_contract(contract, preprocessor=trained.pipeline.preprocessor, config=config)
    assert any("not unique" in p for p in problems)
    assert any("2 output units" in p for p in problems)
    assert any("classify" in p for p in problems)


def test_export_run_writes_keras_archive(trained):
    import keras

    export_run(trained)
    restored = keras.saving.load_model(trained.run.keras_path)
    x, _ = trained.pipeline.arrays("test")
    np.testing.assert_allclose(restored.predict(x, verbose=0), trained.model.predict(x, verbose=0), atol=1e-5)
