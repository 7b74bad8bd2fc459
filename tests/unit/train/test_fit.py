"""tfpilot.fit(model, data): a user's own keras.Model and data, the run directory it leaves, resume,
evaluate, errors. (Parity with model.fit for every kind of input and step: test_fit_parity.py.)

The anchor is Keras' model.fit on the same model (same initial weights), data and optimizer,
computed in the same test: the history must hold the same keys with the same values.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _fit_models import two_headed, two_headed_arrays, two_headed_datasets

# Same float32 ops in the same order; a different fusion could move the last bits only.
RTOL, ATOL = 1e-5, 1e-6


def _keras_history(model, data, **kwargs):
    return model.fit(data, verbose=0, shuffle=False, **kwargs).history


# Under XLA Keras compiles the (guarded) step with jit_compile; it may fuse float arithmetic
# differently from the graph without XLA that model.fit runs here.
@pytest.mark.parametrize("jit_compile, rtol", [(False, RTOL), (True, 1e-4)], ids=["graph", "xla"])
def test_two_inputs_two_outputs_history_matches_model_fit(tmp_path, jit_compile, rtol):
    import tfpilot

    train, validation = two_headed_datasets()
    # model.fit at the same steps_per_execution: Keras 3.16 weighs the per-output loss trackers
    # differently at 1 and at 4 (cls_loss 0.7228 against 0.7463; tfpilot.fit follows fit at each).
    anchor = two_headed()
    anchor.steps_per_execution = 4
    expected = _keras_history(anchor, train, validation_data=validation, epochs=3)
    result = tfpilot.fit(
        two_headed(),
        train,
        validation_data=validation,
        epochs=3,
        name="two",
        runs_dir=tmp_path,
        steps_per_execution=4,
        jit_compile=jit_compile,
    )
    assert result.epochs_run == 3 and result.global_step == 3 * 6
    for key in (
        "loss",
        "cls_loss",
        "reg_loss",
        "cls_auc",
        "cls_accuracy",
        "reg_mae",
        "val_loss",
        "val_cls_loss",
        "val_cls_auc",
    ):
        assert key in expected, key
    for key, values in expected.items():
        ours = [row[key] for row in result.history]
        np.testing.assert_allclose(ours, values, rtol=rtol, atol=ATOL, err_msg=key)
    # The run directory: what `tfpilot train` leaves, plus fit/ for evaluate and export.
    run = tmp_path / "two"
    for name in (
        "config.yaml",
        "history.json",
        "metrics.json",
        "findings.json",
        "fit/model.keras",
        "fit/spec.json",
        "fit/sample_features.npz",
    ):
        assert (run / name).is_file(), name
    assert any((run / "logs" / "train").iterdir()) and any((run / "logs" / "validation").iterdir())
    history = json.loads((run / "history.json").read_text())["epochs"]
    assert [row["val_cls_auc"] for row in history] == [row["val_cls_auc"] for row in result.history]
    metrics = json.loads((run / "metrics.json").read_text())
    assert set(expected) - {k for k in expected if k.startswith("val_")} <= set(metrics["train"])
    np.testing.assert_allclose(metrics["validation"]["loss"], expected["val_loss"][-1], rtol=RTOL)
    spec = json.loads((run / "fit" / "spec.json").read_text())
    assert [(i["name"], i["dtype"], i["shape"]) for i in spec["inputs"]] == [
        ("extra", "float32", [None, 3]),
        ("num", "float32", [None, 4]),
    ]
    assert spec["outputs"] == ["cls", "reg"]


def test_sample_weights_and_weighted_metrics_match_model_fit(tmp_path):
    import keras
    import tensorflow as tf

    import tfpilot

    features, labels = two_headed_arrays(64)
    weights = np.linspace(0.1, 2.0, 64).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((features, labels, weights)).batch(16)

    def model():
        built = two_headed(compiled=False)
        built.compile(
            optimizer=keras.optimizers.SGD(0.05),
            loss=["binary_crossentropy", "mae"],
            metrics={"cls": ["accuracy"]},
            weighted_metrics={"reg": ["mse"]},
        )
        return built

    expected = _keras_history(model(), data, epochs=2)
    result = tfpilot.fit(model(), data, epochs=2, name="weighted", runs_dir=tmp_path)
    assert "reg_mse" in expected and "cls_accuracy" in expected
    for key, values in expected.items():
        np.testing.assert_allclose([row[key] for row in result.history], values, rtol=RTOL, atol=ATOL, err_msg=key)


def test_checkpoints_and_resume_continue_to_the_same_weights(tmp_path):
    import tfpilot

    train, validation = two_headed_datasets()
    straight = two_headed()
    tfpilot.fit(straight, train, validation_data=validation, epochs=3, name="straight", runs_dir=tmp_path)
    first = two_headed()
    tfpilot.fit(first, train, validation_data=validation, epochs=1, name="resumed", runs_dir=tmp_path)
    # A new process would build the model afresh: its weights must come from the checkpoint.
    again = two_headed()
    result = tfpilot.fit(
        again, train, validation_data=validation, epochs=3, name="resumed", runs_dir=tmp_path, resume=True
    )
    assert [row["epoch"] for row in result.history] == [0, 1, 2]
    assert result.global_step == 3 * 6
    for ours, theirs in zip(again.get_weights(), straight.get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert (tmp_path / "resumed" / "checkpoints" / "checkpoint").is_file()
    again_fresh = two_headed()
    with pytest.raises(Exception) as caught:
        tfpilot.fit(again_fresh, train, epochs=1, name="never-ran", runs_dir=tmp_path, resume=True)
    assert "no checkpoint" in str(caught.value)


def test_numpy_arrays_with_an_uncompiled_model_and_loss_given_to_fit(tmp_path):
    import keras

    import tfpilot

    rng = np.random.default_rng(0)
    features = rng.normal(size=(100, 5)).astype("float32")
    labels = (features[:, 0] > 0).astype("int32") + (features[:, 1] > 0).astype("int32")  # 3 classes
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])
    assert not model.compiled
    result = tfpilot.fit(
        model,
        (features, labels),
        validation_data=(features[:20], labels[:20]),
        epochs=4,
        name="arrays",
        runs_dir=tmp_path,
        batch_size=16,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        optimizer={"name": "adam", "learning_rate": 0.02},
    )
    assert result.global_step == 4 * 7  # ceil(100 / 16) batches per epoch
    assert {"loss", "accuracy", "val_loss", "val_accuracy"} <= set(result.history[-1])
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    assert result.history[-1]["accuracy"] > 0.8


def test_lambda_layer_is_reported_not_pickled(tmp_path):
    import keras
    import tensorflow as tf

    import tfpilot

    inputs = keras.Input((2,), name="x")
    outputs = keras.layers.Dense(1)(keras.layers.Lambda(lambda t: t * 2.0)(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse")
    data = tf.data.Dataset.from_tensor_slices((np.ones((8, 2), "float32"), np.ones((8, 1), "float32"))).batch(4)
    result = tfpilot.fit(model, data, epochs=1, name="lambda", runs_dir=tmp_path)
    codes = [f.code for f in result.findings]
    assert "FIT-MODEL-NOT-SAVED" in codes
    assert not (tmp_path / "lambda" / "fit" / "model.keras").exists()
    finding = next(f for f in result.findings if f.code == "FIT-MODEL-NOT-SAVED")
    assert "register_keras_serializable" in finding.fix


def test_an_object_keras_cannot_find_by_name_is_named_in_the_finding(tmp_path):
    import keras
    import tensorflow as tf

    import tfpilot

    def squeeze_spaces(text):  # local: Keras cannot find it by name when it loads the model
        return tf.strings.regex_replace(tf.strings.lower(text), "  +", " ")

    words = np.array(["a good film", "a bad  film"] * 8)
    vectorizer = keras.layers.TextVectorization(max_tokens=10, output_mode="multi_hot", standardize=squeeze_spaces)
    vectorizer.adapt(words)
    text = keras.Input((), dtype="string")
    model = keras.Model(text, keras.layers.Dense(1, activation="sigmoid")(vectorizer(text)))
    model.compile(optimizer="adam", loss="binary_crossentropy")
    labels = np.array([1, 0] * 8, "float32")
    result = tfpilot.fit(model, tf.constant(words), labels, batch_size=4, name="local", runs_dir=tmp_path)
    finding = next(f for f in result.findings if f.code == "FIT-MODEL-NOT-SAVED")
    assert "`squeeze_spaces`" in finding.message and "squeeze_spaces" in finding.fix
    assert finding.evidence["missing"] == "squeeze_spaces"


def test_evaluate_fit_run_matches_model_evaluate(tmp_path):
    import tfpilot
    from tfpilot.rundir import RunDir
    from tfpilot.train.fit import evaluate_fit_run

    train, validation = two_headed_datasets()
    model = two_headed()
    tfpilot.fit(model, train, validation_data=validation, epochs=1, name="ev", runs_dir=tmp_path)
    ours = evaluate_fit_run(RunDir.at(tmp_path / "ev"))
    theirs = model.evaluate(validation, verbose=0, return_dict=True)
    assert ours["batches"] == 3
    for key, value in theirs.items():
        np.testing.assert_allclose(ours[key], value, rtol=RTOL, atol=ATOL, err_msg=key)
    # --data pointing at a folder that is not a saved dataset: what was wrong and what is expected, in one line.
    from tfpilot.errors import DataError

    (tmp_path / "csvs").mkdir()
    (tmp_path / "csvs" / "rows.csv").write_text("a,b\n1,2\n")
    message = _error(lambda: evaluate_fit_run(RunDir.at(tmp_path / "ev"), data_path=tmp_path / "csvs"), DataError)
    assert "dataset.save(DIR)" in message and "csvs" in message


# ------------------------------------------------------------------------------------ errors


def _error(callable_, expected_type):
    with pytest.raises(expected_type) as caught:
        callable_()
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_a_model_fit_call_renamed_to_tfpilot_fit_needs_no_name(tmp_path):
    import keras

    import tfpilot
    from tfpilot.errors import ConfigError

    features, labels = np.ones((16, 3), "float32"), np.zeros(16, "float32")
    runs = []
    for _ in range(2):  # twice within a second: two runs, neither overwriting the other
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)], name="mlp_v1")
        model.compile("sgd", "mse")
        runs.append(tfpilot.fit(model, features, labels, runs_dir=tmp_path).run.root)
    assert runs[0] != runs[1] and all(run.parent == tmp_path for run in runs)
    assert all(run.name.startswith("mlp_v1-") and (run / "history.json").exists() for run in runs)
    message = _error(lambda: tfpilot.fit(model, features, labels, runs_dir=tmp_path, resume=True), ConfigError)
    assert "name=" in message


def test_bad_inputs_are_one_line_errors(tmp_path):
    import tensorflow as tf

    import tfpilot
    from tfpilot.errors import ConfigError, DataError, ModelError, TrainError

    features, labels = two_headed_arrays(32)
    good = tf.data.Dataset.from_tensor_slices((features, labels)).batch(8)

    def fit(model, data, **options):
        return lambda: tfpilot.fit(model, data, epochs=1, name="bad", runs_dir=tmp_path, **options)

    message = _error(fit(two_headed(compiled=False), good), ModelError)
    assert "model.compile" in message and "loss=" in message
    # Refusals where model.fit itself refuses, in one line.
    message = _error(fit(two_headed(), tf.data.Dataset.from_tensor_slices((features, labels))), DataError)
    assert "model.fit refused" in message
    renamed = tf.data.Dataset.from_tensor_slices(({"num": features["num"], "other": features["extra"]}, labels)).batch(
        8
    )
    _error(fit(two_headed(), renamed), DataError)
    message = _error(fit(two_headed(), good.repeat()), DataError)
    assert "steps_per_epoch" in message
    message = _error(fit(two_headed(), good, steps_per_execution=0), ConfigError)
    assert "steps_per_execution" in message
    message = _error(fit(two_headed(), good, early_stopping={"monitor": "val_cls_auc"}), TrainError)
    assert "val_cls_auc" in message and "cls_auc" in message  # logged, but only with validation data
    message = _error(fit(two_headed(), good, epoch=3), ConfigError)
    assert "unknown option `epoch`" in message
    message = _error(fit(two_headed(), good, l2=0.1), ConfigError)
    assert "kernel_regularizer" in message
    message = _error(fit(two_headed(), good, nan_policy="rollback"), ConfigError)
    assert "skip_batch" in message


def test_nan_guard_skips_a_poisoned_batch_of_the_users_dataset(tmp_path):
    import tensorflow as tf

    import tfpilot

    features, labels = two_headed_arrays(64)
    features["num"][20] = np.nan  # batch 1 of 4
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    model = two_headed()
    result = tfpilot.fit(model, data, epochs=2, name="nan", runs_dir=tmp_path, nan_policy="skip_batch")
    assert all(np.isfinite(w).all() for w in model.get_weights())
    assert all(np.isfinite(row["loss"]) for row in result.history)
    skipped = next(f for f in result.findings if f.code == "TRAIN-SKIPPED-BATCHES")
    # Batch 1 in both epochs: the same poisoned rows each time (a dataset without shuffling).
    assert [(e["epoch"], e["batch_index"]) for e in skipped.evidence["skipped_batches"]] == [(0, 1), (1, 1)]
    assert result.global_step == 2 * 3  # optimizer iterations: the two skipped batches never updated it
    stopped = two_headed()
    with pytest.raises(Exception) as caught:
        tfpilot.fit(stopped, data, epochs=1, name="nan-stop", runs_dir=tmp_path)
    assert "\n" not in str(caught.value) and "non-finite" in str(caught.value).lower()


class _Killed(Exception):
    pass


def test_a_run_killed_after_an_epoch_resumes_at_the_next_and_reaches_the_same_weights(tmp_path):
    import keras

    import tfpilot

    class KillAtEpoch(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 2:
                raise _Killed

    features, labels = two_headed_arrays(64)
    # A checkpoint at every epoch's end (the default writes one at most every 30 s).
    options = {"epochs": 3, "runs_dir": tmp_path, "batch_size": 16, "shuffle": False, "checkpoint_every_secs": 0}
    straight = two_headed()
    expected = tfpilot.fit(straight, (features, labels), name="straight", **options)
    with pytest.raises(_Killed):
        tfpilot.fit(two_headed(), (features, labels), name="killed", callbacks=[KillAtEpoch()], **options)
    again = two_headed()
    result = tfpilot.fit(again, (features, labels), name="killed", resume=True, **options)
    assert [row["epoch"] for row in result.history] == [0, 1, 2] and result.global_step == 12
    for ours, theirs in zip(again.get_weights(), straight.get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.history[2]["loss"], expected.history[2]["loss"], rtol=1e-5)


def test_a_model_keras_cannot_rebuild_still_exports_from_the_trained_model(tmp_path):
    """A subclassed model taking sub-models in __init__ without get_config (most keras-io
    subclassed models): .keras cannot be loaded again, so tfpilot.fit writes the serving
    SavedModel from the live model, and `tfpilot export` uses it."""
    import keras
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    class Wrapper(keras.Model):
        def __init__(self, encoder, head):
            super().__init__()
            self.encoder = encoder
            self.head = head

        def call(self, inputs):
            return self.head(self.encoder(inputs))

    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu")])
    model = Wrapper(encoder, keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)]))
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).random((64, 4)).astype("float32")
    result = tfpilot.fit(model, x, x.sum(axis=1), batch_size=16, epochs=1, name="wrap", runs_dir=tmp_path)
    finding = next(f for f in result.findings if f.code == "FIT-MODEL-NOT-SAVED")
    assert "`Wrapper`" in finding.message and "get_config" in finding.fix
    assert "fit/saved_model" in finding.message and finding.severity.value == "info"
    exported = export_fit_run(RunDir.at(tmp_path / "wrap"))
    served = tf.saved_model.load(str(exported.path)).signatures["serving_default"](inputs=tf.constant(x[:5]))
    np.testing.assert_allclose(next(iter(served.values())).numpy(), model.predict(x[:5], verbose=0), rtol=1e-5)


def test_a_model_that_samples_at_inference_is_named_not_exported_unverified(tmp_path):
    import keras

    import tfpilot

    class Noisy(keras.layers.Layer):  # samples even with training=False, as a VAE's Sampling layer
        def call(self, inputs):
            return inputs + keras.random.normal(keras.ops.shape(inputs))

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), Noisy(), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).random((32, 3)).astype("float32")
    result = tfpilot.fit(model, x, x.sum(axis=1), batch_size=8, epochs=1, name="noisy", runs_dir=tmp_path)
    finding = next(f for f in result.findings if f.code == "FIT-MODEL-NOT-SAVED")
    assert "differs between two inference calls" in finding.message


def test_model_fit_positional_arguments_and_initial_epoch_read_the_same(tmp_path):
    """A `model.fit(x, y, 16, 3, 0, initial_epoch=1)` call renamed to tfpilot.fit keeps meaning
    what it meant: batch size 16, epochs 1 and 2 run (the epoch numbers of fit's History)."""
    import keras

    import tfpilot

    def build():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        return model

    x = np.random.default_rng(0).random((64, 3)).astype("float32")
    y = x.sum(axis=1)
    expected = build().fit(x, y, 16, 3, 0, shuffle=False, initial_epoch=1)
    result = tfpilot.fit(build(), x, y, 16, 3, 0, shuffle=False, initial_epoch=1, name="pos", runs_dir=tmp_path)
    assert [row["epoch"] for row in result.history] == expected.epoch == [1, 2]
    np.testing.assert_allclose([row["loss"] for row in result.history], expected.history["loss"], rtol=RTOL)
    assert result.global_step == 8  # 4 batches of 16 in each of the two epochs run


def test_epoch_checkpoints_are_written_at_most_every_checkpoint_every_secs_and_always_at_the_end(tmp_path):
    import tensorflow as tf

    import tfpilot

    features, labels = two_headed_arrays(64)
    options = {"epochs": 3, "runs_dir": tmp_path, "batch_size": 16}

    def saved(name):
        return [
            int(p.split("-")[-1])
            for p in tf.train.get_checkpoint_state(tmp_path / name / "checkpoints").all_model_checkpoint_paths
        ]

    tfpilot.fit(two_headed(), (features, labels), name="hourly", checkpoint_every_secs=3600, **options)
    assert saved("hourly") == [3]  # only the end of training
    tfpilot.fit(two_headed(), (features, labels), name="each", checkpoint_every_secs=0, **options)
    assert saved("each") == [1, 2, 3]
    again = two_headed()
    result = tfpilot.fit(again, (features, labels), name="hourly", resume=True, checkpoint_every_secs=3600, **options)
    assert [row["epoch"] for row in result.history] == [0, 1, 2] and result.global_step == 12
    with pytest.raises(Exception) as caught:
        tfpilot.fit(two_headed(), (features, labels), name="bad", checkpoint_every_secs=-1, **options)
    assert "checkpoint_every_secs" in str(caught.value) and "\n" not in str(caught.value)


def test_the_guarded_step_is_traced_as_often_as_model_fit_traces_its_step(tmp_path):
    # model.fit builds its compiled metrics (and Adam its slots) inside the first trace, so
    # tf.function traces the whole step again. tfpilot.fit traces it where fit does (once it traced it
    # once, saving the trace, and an op that draws its seed at trace time got another seed than under
    # fit: tests/unit/train/test_fit_round17_classes.py). The count is of the model's own train_step.
    import keras

    import tfpilot

    traces = []

    class Counted(keras.Sequential):
        def train_step(self, data):
            traces.append(1)
            return super().train_step(data)

    def model():
        keras.utils.set_random_seed(0)
        built = Counted(
            [keras.Input((5,)), keras.layers.Dense(8), keras.layers.BatchNormalization(), keras.layers.Dense(3)]
        )
        built.compile(
            optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
        )
        return built

    rng = np.random.default_rng(0)
    features, labels = rng.normal(size=(64, 5)).astype("float32"), rng.integers(0, 3, 64)
    plain = model()
    expected = plain.fit(features, labels, batch_size=16, epochs=2, verbose=0).history
    assert len(traces) == 2
    traces.clear()
    ours = model()
    result = tfpilot.fit(
        ours, features, labels, batch_size=16, epochs=2, name="once", runs_dir=tmp_path, nan_policy="skip_batch"
    )
    assert len(traces) == 2
    np.testing.assert_allclose([row["loss"] for row in result.history], expected["loss"], rtol=1e-6)
    for a, b in zip(ours.get_weights(), plain.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_serving_shapes_leave_free_the_dimensions_the_model_or_the_data_leave_free(tmp_path):
    # A sequence dimension the model's Input declares None, or that differs between batches
    # (padded per batch), must not be fixed to the first batch's length in the signature.
    import json

    import keras
    import tensorflow as tf

    import tfpilot

    def shapes(name):
        return [i["shape"] for i in json.loads((tmp_path / name / "fit" / "spec.json").read_text())["inputs"]]

    def text_model(inputs):
        keras.utils.set_random_seed(0)
        hidden = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(50, 4)(inputs))
        built = keras.Model(inputs, keras.layers.Dense(2)(hidden))
        built.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return built

    rng = np.random.default_rng(0)
    tokens, labels = rng.integers(1, 50, size=(32, 12)), rng.integers(0, 2, 32)
    tfpilot.fit(
        text_model(keras.Input((None,), dtype="int32")),
        tokens,
        labels,
        batch_size=8,
        name="declared",
        runs_dir=tmp_path,
    )
    assert shapes("declared") == [[None, None]]
    tfpilot.fit(
        text_model(keras.Input((12,), dtype="int32")), tokens, labels, batch_size=8, name="fixed", runs_dir=tmp_path
    )
    assert shapes("fixed") == [[None, 12]]
    # The model's Input decides where it declares a length, whatever the dataset's static shape says.
    unknown_length = tf.data.Dataset.from_generator(
        lambda: zip(tokens.astype("int32"), labels.astype("int32"), strict=True),
        output_signature=(tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.int32)),
    )
    assert unknown_length.element_spec[0].shape.as_list() == [None]
    tfpilot.fit(
        text_model(keras.Input((12,), dtype="int32")), unknown_length.batch(8), name="declared-fixed", runs_dir=tmp_path
    )
    assert shapes("declared-fixed") == [[None, 12]]

    class Subclassed(keras.Model):
        def __init__(self):
            super().__init__()
            self.embed = keras.layers.Embedding(50, 4)
            self.pool = keras.layers.GlobalAveragePooling1D()
            self.out = keras.layers.Dense(2)

        def call(self, inputs):
            return self.out(self.pool(self.embed(inputs)))

    lengths = [5, 9, 7, 12]
    rows = [(list(rng.integers(1, 50, size=n)), int(rng.integers(0, 2))) for n in lengths for _ in range(8)]
    padded = tf.data.Dataset.from_generator(
        lambda: iter(rows), output_signature=(tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.int32))
    ).padded_batch(8)
    keras.utils.set_random_seed(0)
    model = Subclassed()
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    tfpilot.fit(model, padded, name="padded", runs_dir=tmp_path)
    assert shapes("padded") == [[None, None]]


def test_a_dataset_of_unknown_length_trains_exactly_as_model_fit_trains_it(tmp_path):
    # model.fit finds the end of such a dataset's epoch with one more call of its compiled step,
    # and that call increments optimizer.iterations (the increment needs no batch, so it runs
    # before the iterator fails): Adam's bias correction counts one more step per epoch. The
    # guarded update counts it the same way; a skipped batch still changes nothing (tested with
    # the poisoned batches above).
    import keras
    import tensorflow as tf

    import tfpilot

    rng = np.random.default_rng(0)
    features, labels = rng.normal(size=(48, 5)).astype("float32"), rng.integers(0, 3, 48)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).filter(lambda x, y: True).batch(16)
    assert int(data.cardinality()) == tf.data.UNKNOWN_CARDINALITY

    def model():
        keras.utils.set_random_seed(0)
        built = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3)])
        built.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return built

    plain = model()
    expected = plain.fit(data, epochs=3, verbose=0).history["loss"]
    ours = model()
    result = tfpilot.fit(ours, data, epochs=3, name="unknown", runs_dir=tmp_path)
    assert int(ours.optimizer.iterations.numpy()) == int(plain.optimizer.iterations.numpy())
    assert [row["loss"] for row in result.history] == expected
    for a, b in zip(ours.get_weights(), plain.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
