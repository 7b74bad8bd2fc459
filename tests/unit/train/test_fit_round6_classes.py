"""Classes of failure the sixth outside round of keras-io models showed in tfpilot.fit (issue 29),
each with a model of tfpilot's own that has the same shape: a model that computes only on batches
of the size it trained on, and a trained model whose serving artifact cannot be written at all
(training succeeded; the run must not be lost to it)."""

from __future__ import annotations

import numpy as np

BATCH = 16


def _fixed_batch_model():
    """A subclassed model (Keras cannot rebuild it: no get_config) whose call reshapes to a batch
    size fixed in Python, as a mixture-of-experts router does with its tokens per batch."""
    import keras

    class Router(keras.Model):
        def __init__(self, experts):
            super().__init__()
            self.experts = experts
            self.proj = keras.layers.Dense(4)
            self.out = keras.layers.Dense(1)

        def call(self, inputs):
            flat = keras.ops.reshape(self.proj(inputs), (BATCH * 4,))  # a constant batch, as published
            return self.out(keras.ops.reshape(flat, (BATCH, 4)))

    keras.utils.set_random_seed(0)
    return Router(experts=keras.Sequential([keras.Input((4,)), keras.layers.Dense(4)]))


def test_a_model_that_computes_only_on_its_training_batch_size_exports_for_that_size(tmp_path):
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    model = _fixed_batch_model()
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    x = rng.random((BATCH * 4, 3)).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True))).batch(BATCH)
    result = tfpilot.fit(model, data, epochs=1, name="router", runs_dir=tmp_path)
    finding = next(f for f in result.findings if f.code == "FIT-FIXED-BATCH")
    assert finding.evidence["rows"] == BATCH and "reshape" in finding.evidence["error"].lower()
    # one plain line: no terminal escapes (Keras prints errors bold), no TF function-node prefix
    assert "\x1b" not in finding.message and "function_node" not in finding.message
    exported = export_fit_run(RunDir.at(tmp_path / "router"))
    served = tf.saved_model.load(str(exported.path)).signatures["serving_default"](inputs=tf.constant(x[:BATCH]))
    np.testing.assert_allclose(next(iter(served.values())).numpy(), model(x[:BATCH]).numpy(), rtol=1e-5)


def test_a_fixed_batch_model_fed_arrays_samples_fits_batch_size(tmp_path):
    import tfpilot

    model = _fixed_batch_model()
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(1).random((BATCH * 3, 3)).astype("float32")
    result = tfpilot.fit(model, x, x.sum(axis=1), batch_size=BATCH, epochs=1, name="arrays", runs_dir=tmp_path)
    assert [f.evidence["rows"] for f in result.findings if f.code == "FIT-FIXED-BATCH"] == [BATCH]
    assert not [f for f in result.findings if f.code == "FIT-MODEL-NOT-SAVED" and "did not verify" in f.message]


def test_a_trained_model_whose_serving_model_cannot_be_written_still_returns_its_run(tmp_path):
    """The model trains, but fails in inference mode on any rows: the run (history, checkpoints)
    comes back with a finding that names the failure, instead of an exception after training."""
    import keras

    import tfpilot

    class TrainOnly(keras.Model):
        def __init__(self, head):
            super().__init__()
            self.head = head
            self.trained = False  # set when fit ends (Keras traces call() in inference mode while it builds)

        def call(self, inputs, training=None):
            if training is False and self.trained:  # any inference call after training, eager or traced
                raise ValueError("this model has no inference mode")
            return self.head(inputs)

    class MarkTrained(keras.callbacks.Callback):
        def on_train_end(self, logs=None):
            self.model.trained = True

    keras.utils.set_random_seed(0)
    model = TrainOnly(keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)]))
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(2).random((32, 3)).astype("float32")
    result = tfpilot.fit(
        model, x, x.sum(axis=1), batch_size=8, epochs=2, callbacks=[MarkTrained()], name="trainonly", runs_dir=tmp_path
    )
    assert result.epochs_run == 2 and len(result.history) == 2
    assert not [f for f in result.findings if f.code == "FIT-FIXED-BATCH"]
    finding = next(f for f in result.findings if f.code == "FIT-MODEL-NOT-SAVED")
    assert "no inference mode" in finding.message


def _decayed_model(schedule: bool):
    import keras

    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    rate = keras.optimizers.schedules.ExponentialDecay(0.01, decay_steps=3, decay_rate=0.5) if schedule else 0.01
    model.compile(optimizer=keras.optimizers.AdamW(learning_rate=rate, weight_decay=0.05), loss="mse")
    return model


def _unknown_length_data(seed: int):
    """A dataset whose length tf.data cannot know (a filter), as make_csv_dataset's or a
    generator's: model.fit finds each epoch's end with one more call of its step."""
    import tensorflow as tf

    x = np.random.default_rng(seed).random((96, 4)).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1, keepdims=True))).filter(lambda a, b: True)
    return data.batch(16)


def test_adamw_on_a_dataset_of_unknown_length_trains_to_model_fits_weights_bit_for_bit(tmp_path):
    """model.fit's step finds the end of such a dataset with one more call, which fails at the
    batch after running what needs none: the iteration increment and AdamW's weight decay. The
    guard keeps the decay inside its cond, so tfpilot.fit replays it on the host, before validation."""
    import tfpilot

    for schedule in (False, True):
        reference = _decayed_model(schedule)
        kept = reference.fit(_unknown_length_data(0), validation_data=_unknown_length_data(1), epochs=3, verbose=0)
        ours = _decayed_model(schedule)
        result = tfpilot.fit(
            ours,
            _unknown_length_data(0),
            validation_data=_unknown_length_data(1),
            epochs=3,
            name=f"adamw{int(schedule)}",
            runs_dir=tmp_path,
        )
        assert result.keras_history.history == kept.history
        for want, got in zip(reference.weights, ours.weights, strict=True):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert int(ours.optimizer.iterations.numpy()) == int(reference.optimizer.iterations.numpy())


def test_a_skipped_batch_leaves_adamws_weights_alone(tmp_path):
    import tensorflow as tf

    import tfpilot

    model = _decayed_model(False)
    x = np.random.default_rng(4).random((32, 4)).astype("float32")
    x[0, 0] = np.nan  # the first batch of two is bad
    before = [np.asarray(w).copy() for w in model.weights]
    data = tf.data.Dataset.from_tensor_slices((x, np.ones((32, 1), "float32"))).batch(16).take(1)
    result = tfpilot.fit(model, data, epochs=1, name="skip", runs_dir=tmp_path, nan_policy="skip_batch")
    assert [f.code for f in result.findings if f.code == "TRAIN-SKIPPED-BATCHES"]
    for want, got in zip(before, model.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(got), want)


def test_validation_data_that_cannot_be_read_again_costs_a_finding_not_the_run(tmp_path):
    """Validation batches from a source that can be read only as often as fit reads it (a stream):
    keeping them for `tfpilot evaluate` fails after training; the run comes back with a warning
    and no half-written fit/validation."""
    import keras
    import tensorflow as tf

    import tfpilot

    reads = [0]

    def stream():
        reads[0] += 1
        if reads[0] > 1:
            raise RuntimeError("the stream was already consumed")
        for row in np.random.default_rng(5).random((16, 3)).astype("float32"):
            yield row, row.sum(keepdims=True)

    validation = tf.data.Dataset.from_generator(
        stream,
        output_signature=(tf.TensorSpec((3,), tf.float32), tf.TensorSpec((1,), tf.float32)),
    ).batch(8)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(6).random((32, 3)).astype("float32")
    result = tfpilot.fit(
        model, x, x.sum(axis=1), batch_size=8, epochs=1, validation_data=validation, name="stream", runs_dir=tmp_path
    )
    assert result.epochs_run == 1 and "val_loss" in result.history[-1]
    finding = next(f for f in result.findings if f.code == "FIT-ARTIFACT-NOT-WRITTEN")
    assert "fit/validation" in finding.message and "already consumed" in finding.message
    assert not (tmp_path / "stream" / "fit" / "validation").exists()
    assert not (tmp_path / "stream" / "fit" / "validation.partial").exists()
