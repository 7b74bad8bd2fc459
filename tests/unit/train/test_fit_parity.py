"""tfpilot.fit honours everything model.fit honours: the anchor is model.fit itself, run in the same
test on a model built from the same seed with the same data (histories must be equal).

Covered: the model's own train_step/test_step, add_loss in the logged loss, sparse Embedding
gradients, (batch,) string and per-column features, float64 arrays, generators, PyDataset,
validation_split, class_weight, sample_weight, Keras callbacks (same calls, same logs), and the
NaN guard leaving every variable as if the bad batch had never been there.
"""

from __future__ import annotations

import numpy as np
import pytest
from _fit_models import (
    batch_norm_dropout,
    embedding_with_add_loss,
    own_train_step_model,
    token_arrays,
    two_headed,
    two_headed_arrays,
)

RTOL, ATOL = 1e-5, 1e-6


def _assert_same_history(ours, theirs, *, rtol=RTOL):
    assert set(theirs) <= set(ours[0]) if ours else not theirs
    for key, values in theirs.items():
        np.testing.assert_allclose([row[key] for row in ours], values, rtol=rtol, atol=ATOL, err_msg=key)


def _both(build, tmp_path, **fit_kwargs):
    import tfpilot

    expected = build().fit(verbose=0, **fit_kwargs).history
    model = build()
    result = tfpilot.fit(model, name="parity", runs_dir=tmp_path, **fit_kwargs)
    return expected, result, model


def test_add_loss_and_sparse_embedding_gradients_match_model_fit(tmp_path):
    tokens, labels = token_arrays()
    expected, result, model = _both(
        embedding_with_add_loss, tmp_path, x=tokens, y=labels, batch_size=16, epochs=3, shuffle=False
    )
    _assert_same_history(result.history, expected)
    # The logged loss is the total fit logs, penalty included: the penalty is > 0 here.
    model(tokens[:4])
    assert model.losses and float(model.losses[0]) > 0


def test_the_models_own_train_step_runs_and_matches_model_fit(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = x[:, :1] * 2.0
    expected, result, _ = _both(
        own_train_step_model, tmp_path, x=x, y=y, batch_size=16, epochs=3, shuffle=False, validation_data=(x, y)
    )
    assert set(expected) == {"own_loss", "val_own_loss"}
    _assert_same_history(result.history, expected)
    assert "FIT-OWN-TRAIN-STEP" in [f.code for f in result.findings]


def test_string_and_per_column_features_of_shape_batch_are_taken_as_fit_takes_them(tmp_path):
    import keras
    import tensorflow as tf

    words = np.array(["good film", "bad film", "great plot", "awful plot"] * 16)
    stars = np.arange(64, dtype="float64") % 5  # float64, as a dataframe column is
    labels = np.array([1, 0, 1, 0] * 16, "float32")
    vectorizer = keras.layers.TextVectorization(max_tokens=20, output_mode="multi_hot")
    vectorizer.adapt(words)

    def build():
        keras.utils.set_random_seed(7)
        text = keras.Input((), dtype="string", name="review")
        rating = keras.Input((1,), name="stars")
        joined = keras.layers.Concatenate()([vectorizer(text), rating])
        model = keras.Model({"review": text, "stars": rating}, keras.layers.Dense(1, activation="sigmoid")(joined))
        model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        return model

    # One (batch,) tensor per column, as tf.data.Dataset.from_tensor_slices(dict(dataframe)) yields.
    data = tf.data.Dataset.from_tensor_slices(({"review": words, "stars": stars}, labels)).batch(16)
    expected, result, _ = _both(build, tmp_path, x=data, epochs=2)
    _assert_same_history(result.history, expected)
    import json

    inputs = {i["name"]: i for i in json.loads((tmp_path / "parity" / "fit" / "spec.json").read_text())["inputs"]}
    assert inputs["review"]["dtype"] == "string" and inputs["review"]["shape"] == [None]
    # A float64 column serves as float32, the type the model computes in.
    assert inputs["stars"]["dtype"] == "float32"


def test_generators_pydataset_validation_split_class_and_sample_weights(tmp_path):
    import keras

    import tfpilot

    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 5))  # float64: Keras casts it to float32
    y = (x[:, 0] > 0).astype("int32")

    def build():
        keras.utils.set_random_seed(2)
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(2, activation="softmax")])
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        return model

    expected, result, model = _both(
        build,
        tmp_path,
        x=x,
        y=y,
        batch_size=10,
        epochs=2,
        shuffle=False,
        validation_split=0.25,
        class_weight={0: 1.0, 1: 3.0},
    )
    _assert_same_history(result.history, expected)
    spec = (tmp_path / "parity" / "fit" / "spec.json").read_text()
    assert '"float32"' in spec and '"inputs"' in spec and "keras_tensor" not in spec
    # The rows validation_split held out are kept: `tfpilot evaluate` reproduces the last val_ logs.
    from tfpilot.rundir import RunDir
    from tfpilot.train.fit import evaluate_fit_run

    evaluated = evaluate_fit_run(RunDir.at(tmp_path / "parity"))
    np.testing.assert_allclose(evaluated["loss"], expected["val_loss"][-1], rtol=1e-5)
    np.testing.assert_allclose(evaluated["accuracy"], expected["val_accuracy"][-1], rtol=1e-5)

    weights = np.linspace(0.5, 1.5, 60)
    expected, result, _ = _both(
        build, tmp_path, x=x, y=y, sample_weight=weights, batch_size=20, epochs=2, shuffle=False
    )
    _assert_same_history(result.history, expected)

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 6

        def __getitem__(self, index):
            rows = slice(index * 10, index * 10 + 10)
            return x[rows].astype("float32"), y[rows]

    expected, result, _ = _both(build, tmp_path, x=Batches(), epochs=2)
    _assert_same_history(result.history, expected)

    def generator():
        for index in range(6):
            yield x[index * 10 : index * 10 + 10].astype("float32"), y[index * 10 : index * 10 + 10]

    theirs = build().fit(generator(), epochs=1, verbose=0).history
    ours = tfpilot.fit(build(), generator(), epochs=1, name="gen", runs_dir=tmp_path)
    _assert_same_history(ours.history, theirs)
    # A generator can be read once; the serving inputs come from the batch the step received.
    spec = (tmp_path / "gen" / "fit" / "spec.json").read_text()
    assert '"float32"' in spec and '"shape": [\n        null,\n        5\n      ]' in spec


class _Recorder:
    """A Keras callback that writes down every call it gets and the logs it is given."""

    def __init__(self) -> None:
        import keras

        calls: list[tuple] = []
        self.calls = calls

        class Recording(keras.callbacks.Callback):
            def _record(self, name, index=None, logs=None):
                calls.append((name, index, tuple(sorted((k, round(float(v), 5)) for k, v in (logs or {}).items()))))

            def on_train_begin(self, logs=None):
                self._record("train_begin")

            def on_epoch_begin(self, epoch, logs=None):
                self._record("epoch_begin", epoch)

            def on_train_batch_end(self, batch, logs=None):
                self._record("batch_end", batch, logs)

            def on_test_end(self, logs=None):
                self._record("test_end", None, logs)

            def on_epoch_end(self, epoch, logs=None):
                self._record("epoch_end", epoch, {k: v for k, v in (logs or {}).items() if k != "learning_rate"})

        self.callback = Recording()


def test_keras_callbacks_get_the_same_calls_and_logs_as_under_fit(tmp_path):
    import keras

    import tfpilot

    features, labels = two_headed_arrays(64)
    val = two_headed_arrays(32, seed=1)

    def callbacks(directory):
        return [
            keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1),
            keras.callbacks.LearningRateScheduler(lambda epoch, rate: rate * 0.9),
            keras.callbacks.CSVLogger(str(directory / "log.csv")),
            keras.callbacks.TerminateOnNaN(),
            keras.callbacks.EarlyStopping(monitor="val_loss", patience=1, restore_best_weights=True),
        ]

    (tmp_path / "keras").mkdir()
    (tmp_path / "ours").mkdir()
    theirs_recorder, ours_recorder = _Recorder(), _Recorder()
    same = {"batch_size": 16, "epochs": 6, "validation_data": val, "shuffle": False}
    keras_model = two_headed()
    keras_model.fit(
        features, labels, verbose=0, callbacks=[theirs_recorder.callback, *callbacks(tmp_path / "keras")], **same
    )
    model = two_headed()
    result = tfpilot.fit(
        model,
        features,
        labels,
        callbacks=[ours_recorder.callback, *callbacks(tmp_path / "ours")],
        name="cb",
        runs_dir=tmp_path,
        **same,
    )
    assert ours_recorder.calls == theirs_recorder.calls
    assert (tmp_path / "ours" / "log.csv").read_text() == (tmp_path / "keras" / "log.csv").read_text()
    assert isinstance(result.keras_history, keras.callbacks.History)
    assert float(model.optimizer.learning_rate) == pytest.approx(float(keras_model.optimizer.learning_rate))
    for ours, theirs in zip(model.get_weights(), keras_model.get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("steps_per_execution", [1, 3])
def test_a_skipped_batch_leaves_every_variable_as_if_it_had_never_been_there(tmp_path, steps_per_execution):
    """Poison batch 2; the run must equal model.fit on the data without batch 2: same weights,
    BatchNormalization statistics, dropout seed state, optimizer slots and iterations, and the
    same logged metrics (the bad batch's are rolled back too)."""
    import keras

    import tfpilot

    rng = np.random.default_rng(0)
    x = rng.random((48, 4)).astype("float32")
    y = x.sum(axis=1)
    poisoned = x.copy()
    poisoned[2 * 8 + 3, 1] = np.nan
    keep = np.r_[0:16, 24:48]

    def build():
        model = batch_norm_dropout()
        model.compile(
            optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"], steps_per_execution=steps_per_execution
        )
        return model

    clean = build()
    expected = clean.fit(x[keep], y[keep], batch_size=8, epochs=2, shuffle=False, verbose=0).history
    model = build()
    result = tfpilot.fit(
        model,
        poisoned,
        y,
        batch_size=8,
        epochs=2,
        shuffle=False,
        nan_policy="skip_batch",
        name="skip",
        runs_dir=tmp_path,
    )
    _assert_same_history(result.history, expected)
    for ours, theirs in zip(model.variables, clean.variables, strict=True):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=RTOL, atol=ATOL, err_msg=ours.path)
    for ours, theirs in zip(model.optimizer.variables, clean.optimizer.variables, strict=True):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=RTOL, atol=ATOL, err_msg=ours.path)
    assert np.isfinite(model.predict(x, verbose=0)).all()
    skipped = next(f for f in result.findings if f.code == "TRAIN-SKIPPED-BATCHES")
    assert [(e["epoch"], e["batch_index"]) for e in skipped.evidence["skipped_batches"]] == [(0, 2), (1, 2)]
    # The NaN came with the data: the finding says so and names the rows, not the first op touching it.
    assert skipped.evidence["input_role"] == "features" and skipped.evidence["input_rows"] == [3]
    assert "the batch itself held NaN/Inf" in skipped.message


def test_a_nan_born_inside_the_model_is_located_at_its_op(tmp_path):
    import keras

    import tfpilot

    class LogFeatures(keras.layers.Layer):
        def call(self, inputs):
            return keras.ops.log(inputs)  # finite data, NaN for a negative value

    rng = np.random.default_rng(0)
    x = rng.random((32, 4)).astype("float32") + 0.1
    x[13, 0] = -1.0  # batch 1 of 4
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), LogFeatures(), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    result = tfpilot.fit(
        model,
        x,
        x.sum(axis=1),
        batch_size=8,
        epochs=1,
        shuffle=False,
        nan_policy="skip_batch",
        name="log",
        runs_dir=tmp_path,
    )
    skipped = next(f for f in result.findings if f.code == "TRAIN-SKIPPED-BATCHES")
    assert skipped.evidence["op"] == "Log" and skipped.evidence["reproduced"] is True
    assert [e["batch_index"] for e in skipped.evidence["skipped_batches"]] == [1]
    assert all(np.isfinite(np.asarray(v)).all() for v in model.variables)


def test_the_retry_limit_counts_bad_batches_in_a_row_and_says_so(tmp_path):
    import tfpilot
    from tfpilot.errors import TrainError

    rng = np.random.default_rng(0)
    x = rng.random((40, 4)).astype("float32")
    y = x.sum(axis=1)
    one_bad = x.copy()
    one_bad[5, 0] = np.nan  # batch 0 of 5, every epoch

    def skipping(data, *, epochs, retries, name):
        return tfpilot.fit(
            batch_norm_dropout(), data, y, batch_size=8, epochs=epochs, shuffle=False, nan_policy="skip_batch",
            nan_max_retries=retries, name=name, runs_dir=tmp_path,
        )  # fmt: skip

    result = skipping(one_bad, epochs=6, retries=1, name="one")
    assert result.epochs_run == 6  # six skips over the run, never two in a row
    run_of_bad = x.copy()
    run_of_bad[8:32, 0] = np.nan  # batches 1, 2 and 3
    with pytest.raises(TrainError) as caught:
        skipping(run_of_bad, epochs=2, retries=2, name="run")
    message = str(caught.value)
    assert "nan_max_retries=2" in message and "in a row" in message and "\n" not in message


def test_stop_halts_in_the_graph_at_the_bad_batch_though_the_host_reads_later(tmp_path):
    """The host reads the guard every few dozen calls; the graph itself halts at the bad batch,
    so the weights are those of training on the batches before it, not after."""
    import keras

    import tfpilot
    from tfpilot.errors import TrainError

    rng = np.random.default_rng(0)
    x = rng.random((48, 4)).astype("float32")
    y = x.sum(axis=1)
    poisoned = x.copy()
    poisoned[2 * 8 + 1, 0] = np.nan  # batch 2 of 6

    def build():
        model = batch_norm_dropout()
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
        return model

    before_bad = build()
    before_bad.fit(x[:16], y[:16], batch_size=8, epochs=1, shuffle=False, verbose=0)
    model = build()
    with pytest.raises(TrainError) as caught:
        tfpilot.fit(model, poisoned, y, batch_size=8, epochs=1, shuffle=False, name="stop", runs_dir=tmp_path)
    assert "nan_policy=stop" in str(caught.value) and "\n" not in str(caught.value)
    for ours, theirs in zip(model.variables, before_bad.variables, strict=True):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=RTOL, atol=ATOL, err_msg=ours.path)
