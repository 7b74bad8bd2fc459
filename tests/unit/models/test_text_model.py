"""The text model: padding is masked out; dict features (text + numeric) flow through pipeline, model and export."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from tfpilot.config.schema import DataConfig, ModelConfig
from tfpilot.data import build_pipeline
from tfpilot.export import export_saved_model
from tfpilot.export.verify import run_with_session_loader
from tfpilot.models import build_model


def test_extra_padding_does_not_change_logits() -> None:
    keras.utils.set_random_seed(0)
    model = build_model(
        ModelConfig(name="text", hidden_units=[8], embedding_dim=8, dropout=0.0),
        input_shape=(None,),
        num_classes=3,
        vocab_size=20,
    )
    assert model.get_layer("embedding").input_dim == 20
    short = np.array([[5, 7, 3]], np.int32)
    padded = np.array([[5, 7, 3, 0, 0, 0, 0, 0]], np.int32)
    np.testing.assert_allclose(model(padded).numpy(), model(short).numpy(), atol=1e-6)
    # Sanity: the test can fail; a real token in place of padding changes the output.
    assert np.abs(model(np.array([[5, 7, 3, 9]], np.int32)).numpy() - model(short).numpy()).max() > 1e-4


def test_dict_features_flow_through_pipeline_model_and_export(tmp_path: Path) -> None:
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 120)
    words = np.array(["good great fine", "bad poor awful"])
    texts = np.array([f"{words[y]} item {'x ' * int(rng.integers(0, 5))}".strip() for y in labels])
    numbers = np.stack([labels + rng.normal(0, 0.1, 120), rng.normal(0, 1, 120)], axis=1).astype(np.float32)
    data = DataConfig(kind="arrays", shuffle_buffer=0, batching="padded", text={"max_length": 6, "vocab_size": 30})
    pipeline = build_pipeline(data, batch_size=16, features={"text": texts, "x": numbers}, labels=labels)
    pre = pipeline.preprocessor
    assert pipeline.source.kind == "text" and pre.numeric_columns == ["x"]
    assert pre.output_shape() == {"tokens": (None,), "numeric": (2,)}
    features, batch_labels = next(iter(pipeline.train(epoch=0)))
    assert set(features) == {"tokens", "numeric"} and features["tokens"].dtype == tf.int32
    assert features["numeric"].shape[1:] == (2,)

    model = build_model(
        ModelConfig(name="text", hidden_units=[8], embedding_dim=8, dropout=0.0),
        input_shape=pre.output_shape(),
        num_classes=2,
        vocab_size=pre.vocab_size,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.05), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    x, y = pipeline.arrays("train")
    model.fit(x, y, epochs=10, batch_size=16, verbose=0)
    test_x, test_y = pipeline.arrays("test")
    accuracy = float(np.mean(np.argmax(model.predict(test_x, verbose=0), -1) == test_y))
    assert accuracy >= 0.9

    raw = {"text": texts[:5].astype(object), "x": numbers[:5]}
    result = export_saved_model(
        model=model,
        preprocessor=pre,
        class_names=pipeline.class_names,
        base_path=tmp_path / "model",
        sample_features=raw,
        signatures=["serving_default"],
    )
    # The session loader (saved_model_cli / TF Serving path) initialises the vocabulary table.
    out = run_with_session_loader(
        result.path, {"text": np.array([b"good great item", b"bad poor item"]), "x": numbers[:2]}
    )
    assert out["probabilities"].dtype == np.float32 and out["probabilities"].shape == (2, 2)
    in_process = model(pre({"text": tf.constant(["good great item", "bad poor item"]), "x": tf.constant(numbers[:2])}))
    np.testing.assert_allclose(out["probabilities"], tf.nn.softmax(in_process).numpy(), atol=1e-5)
