"""A tfpilot.fit run afterwards, as a user drives it: `tfpilot evaluate RUN`, `tfpilot export RUN`,
then `tfpilot serve` on the exported model answering REST predict with the model's own outputs."""

from __future__ import annotations

import json
import os
import signal
import urllib.request

import numpy as np
import pytest

from conftest import rest_url, run_tfpilot, start_serve, wait_until_serving

ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


def _two_headed():
    import keras

    keras.utils.set_random_seed(3)
    num = keras.Input((4,), name="num")
    tag = keras.Input((1,), name="tag", dtype="int32")
    embedded = keras.layers.Flatten()(keras.layers.Embedding(5, 2)(tag))
    hidden = keras.layers.Dense(8, activation="relu")(keras.layers.Concatenate()([num, embedded]))
    cls = keras.layers.Dense(1, activation="sigmoid", name="cls")(hidden)
    reg = keras.layers.Dense(1, name="reg")(hidden)
    model = keras.Model({"num": num, "tag": tag}, {"cls": cls, "reg": reg})
    model.compile(
        optimizer=keras.optimizers.Adam(0.01),
        loss={"cls": "binary_crossentropy", "reg": "mse"},
        loss_weights={"cls": 1.0, "reg": 0.3},
        metrics={"cls": ["auc"], "reg": ["mae"]},
    )
    return model


def _data(rows: int, seed: int):
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    features = {"num": rng.random((rows, 4)).astype("float32"), "tag": rng.integers(0, 5, (rows, 1)).astype("int32")}
    labels = {
        "cls": (features["num"][:, :1] > 0.5).astype("float32"),
        "reg": (features["num"][:, 1:2] * 2 + features["tag"] * 0.1).astype("float32"),
    }
    return features, tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)


def _predict(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read().decode())


@pytest.mark.slow
def test_fit_run_evaluates_exports_and_serves_rest_predict(tmp_path):
    import tfpilot

    _, train = _data(80, 0)
    val_features, validation = _data(32, 1)
    model = _two_headed()
    result = tfpilot.fit(model, train, validation_data=validation, epochs=2, name="fitted", runs_dir=tmp_path)
    run = tmp_path / "fitted"

    evaluated = run_tfpilot(["evaluate", run], cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated
    assert "cls_auc" in evaluated.stdout and "reg_mae" in evaluated.stdout
    wrong = run_tfpilot(["evaluate", run, "--data", tmp_path / "absent"], cwd=tmp_path)
    assert wrong.returncode == 2 and "tf.data.Dataset.save" in wrong.stderr

    exported = run_tfpilot(["export", run], cwd=tmp_path)
    assert exported.returncode == 0, exported
    assert "verified with both loaders" in exported.stdout
    refused = run_tfpilot(["export", run, "--format", "tflite"], cwd=tmp_path)
    assert refused.returncode == 2 and "saved_model only" in refused.stderr

    process = start_serve(
        [f"--model_base_path={run / 'model'}", "--model_name=fitted", "--rest_api_port=auto", "--port=0"], ENV
    )
    try:
        base = rest_url(wait_until_serving(process))
        with urllib.request.urlopen(f"{base}/v1/models/fitted/metadata", timeout=60) as response:
            metadata = json.loads(response.read().decode())
        signature = metadata["metadata"]["signature_def"]["signature_def"]["serving_default"]
        assert set(signature["inputs"]) == {"num", "tag"}
        assert signature["inputs"]["tag"]["dtype"] == "DT_INT32"
        assert signature["inputs"]["num"]["tensor_shape"]["dim"][0]["size"] == "-1"
        assert set(signature["outputs"]) == {"cls", "reg"}
        rows = 5
        instances = [
            {"num": val_features["num"][i].tolist(), "tag": val_features["tag"][i].tolist()} for i in range(rows)
        ]
        answer = _predict(f"{base}/v1/models/fitted:predict", {"instances": instances})
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    expected = model.predict({k: v[:rows] for k, v in val_features.items()}, verbose=0)
    served_cls = np.array([p["cls"] for p in answer["predictions"]])
    served_reg = np.array([p["reg"] for p in answer["predictions"]])
    np.testing.assert_allclose(served_cls, expected["cls"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(served_reg, expected["reg"], rtol=1e-5, atol=1e-6)
    assert result.epochs_run == 2


def test_single_input_model_exports_with_its_input_name(tmp_path):
    import keras
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    keras.utils.set_random_seed(0)
    inputs = keras.Input((3,), name="pixels")
    model = keras.Model(inputs, keras.layers.Dense(2, name="scores")(inputs))
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    features, labels = rng.random((24, 3)).astype("float32"), rng.integers(0, 2, 24)
    tfpilot.fit(model, (features, labels), epochs=1, name="single", runs_dir=tmp_path, batch_size=8)
    exported = export_fit_run(RunDir.at(tmp_path / "single"))
    loaded = tf.saved_model.load(str(exported.path))
    outputs = loaded.signatures["serving_default"](pixels=tf.constant(features[:4]))
    assert list(outputs) == ["scores"]
    np.testing.assert_allclose(outputs["scores"].numpy(), model.predict(features[:4], verbose=0), rtol=1e-5, atol=1e-6)
