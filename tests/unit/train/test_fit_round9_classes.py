"""A class of failure round 9's keras-io models showed in tfpilot.fit (issue 29), with a model of
tfpilot's own of the same shape: a subclassed model with its own train_step that calls itself in
its own way (`self([source, target])` from a dict batch) and is not built before fit. model.fit
never builds such a model from the batch on one device; the step builds it."""

from __future__ import annotations

import numpy as np


def _pair_model():
    import keras
    import tensorflow as tf

    class Pair(keras.Model):
        def __init__(self):
            super().__init__()
            self.a = keras.layers.Dense(4)
            self.b = keras.layers.Dense(4)
            self.out = keras.layers.Dense(1)
            self.tracker = keras.metrics.Mean(name="loss")

        def call(self, inputs):
            source, target = inputs  # a pair, not the batch's dict
            return self.out(self.a(source) + self.b(target))

        def train_step(self, batch):
            with tf.GradientTape() as tape:
                pred = self([batch["source"], batch["target"]])
                loss = self.compute_loss(None, batch["y"], pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            self.tracker.update_state(loss)
            return {"loss": self.tracker.result()}

        @property
        def metrics(self):
            return [self.tracker]

    keras.utils.set_random_seed(0)
    model = Pair()
    model.compile(optimizer="adam", loss="mse")
    return model


def _data(poison: bool = False):
    import tensorflow as tf

    rng = np.random.default_rng(0)
    data = {
        "source": rng.normal(size=(64, 3)).astype("float32"),
        "target": rng.normal(size=(64, 2)).astype("float32"),
        "y": rng.normal(size=(64, 1)).astype("float32"),
    }
    if poison:
        data["source"][20, 1] = np.nan
    return tf.data.Dataset.from_tensor_slices(data).batch(16)


def test_an_own_train_step_model_that_only_its_step_can_build_trains_as_under_model_fit(tmp_path):
    import tfpilot

    expected = _pair_model().fit(_data(), epochs=2, verbose=0).history
    result = tfpilot.fit(_pair_model(), _data(), epochs=2, verbose=0, name="pair", runs_dir=tmp_path)
    assert result.keras_history.history == expected


def test_its_bad_batch_is_skipped_with_every_variable_finite(tmp_path):
    import tfpilot

    model = _pair_model()
    result = tfpilot.fit(
        model, _data(poison=True), epochs=1, verbose=0, name="nan", runs_dir=tmp_path, nan_policy="skip_batch"
    )
    assert all(np.isfinite(np.asarray(v)).all() for v in model.variables)
    assert "TRAIN-SKIPPED-BATCHES" in [f.code for f in result.findings]


def _layerwise_model():
    """Each layer trains itself with an optimizer of its own (keras-io's forward-forward network):
    the compiled optimizer never steps, and the train_step is a tf.function of its own."""
    import keras
    import tensorflow as tf

    class SelfTraining(keras.layers.Layer):
        def __init__(self, units):
            super().__init__()
            self.dense = keras.layers.Dense(units)
            self.optimizer = keras.optimizers.Adam(0.03)

        def call(self, x):
            return self.dense(x)

        def learn(self, x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.reduce_mean(self.dense(x), axis=1, keepdims=True) - y))
            grads = tape.gradient(loss, self.dense.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.dense.trainable_weights, strict=True))
            return loss

    class Layerwise(keras.Model):
        def __init__(self):
            super().__init__()
            self.blocks = [SelfTraining(4), SelfTraining(4)]

        def call(self, x):
            for block in self.blocks:
                x = block(x)
            return x

        @tf.function  # as keras-io's network: its updates happen in a graph of their own
        def train_step(self, data):
            x, y = data
            losses = []
            for block in self.blocks:
                losses.append(block.learn(x, y))
                x = tf.stop_gradient(block(x))
            return {"loss": tf.add_n(losses)}

    keras.utils.set_random_seed(0)
    model = Layerwise()
    model.compile(optimizer=keras.optimizers.Adam(0.03), loss="mse")
    model(np.zeros((1, 3), "float32"))
    return model


def test_layers_that_train_themselves_have_their_bad_batch_skipped_too(tmp_path):
    import tfpilot

    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = rng.normal(size=(64, 1)).astype("float32")
    x[5, 0] = np.nan
    model = _layerwise_model()
    result = tfpilot.fit(
        model, x, y, batch_size=16, epochs=2, verbose=0, name="ff", runs_dir=tmp_path, nan_policy="skip_batch"
    )
    assert all(np.isfinite(np.asarray(v)).all() for v in model.variables)
    optimizers = [block.optimizer for block in model.blocks]
    assert all(np.isfinite(np.asarray(v)).all() for o in optimizers for v in o.variables)
    assert "TRAIN-SKIPPED-BATCHES" in [f.code for f in result.findings]
