"""A class of failure round 11's keras-io models showed in tfpilot.fit (issue 29), with a model of
tfpilot's own of the same shape: a functional model (built before fit) with its own train_step,
fed batches that are not its input (a stack of anchor / positive pairs, x only). model.fit never
calls the model on the batch; tfpilot.fit's symbolic build of the compile state did, and refused
the data with the model's input-shape error."""

from __future__ import annotations

import numpy as np


def _pairs_model():
    import keras
    import tensorflow as tf

    class PairEmbedding(keras.Model):
        def train_step(self, data):
            anchors, positives = data[0], data[1]  # the batch stacks pairs: (2, n, features)
            with tf.GradientTape() as tape:
                similarities = tf.matmul(self(anchors, training=True), self(positives, training=True), transpose_b=True)
                labels = tf.range(tf.shape(anchors)[0])
                loss = self.compute_loss(y=labels, y_pred=similarities)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            for metric in self.metrics:
                metric.update_state(loss) if metric.name == "loss" else metric.update_state(labels, similarities)
            return {m.name: m.result() for m in self.metrics}

    keras.utils.set_random_seed(0)
    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(8, activation="relu")(inputs)
    outputs = keras.layers.UnitNormalization()(keras.layers.Dense(4)(hidden))
    model = PairEmbedding(inputs, outputs)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["sparse_categorical_accuracy"],
    )
    return model


def _pairs(poison: bool = False):
    import tensorflow as tf

    rng = np.random.default_rng(0)
    anchors = rng.normal(size=(12, 5, 6)).astype("float32")
    positives = anchors + 0.1 * rng.normal(size=anchors.shape).astype("float32")
    stacked = np.stack([anchors, positives], axis=1)  # (batches, 2, pairs, features)
    if poison:
        stacked[3, 0, 1, 2] = np.nan
    return tf.data.Dataset.from_tensor_slices(stacked)  # each element is one batch of pairs, x only


def test_a_built_model_whose_step_reads_the_batch_its_own_way_trains_as_under_model_fit_and_exports(tmp_path):
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    expected = _pairs_model().fit(_pairs(), epochs=2, verbose=0).history
    model = _pairs_model()
    result = tfpilot.fit(model, _pairs(), epochs=2, verbose=0, name="pairs", runs_dir=tmp_path)
    assert result.keras_history.history == expected
    # The batches are not the model's input: the signature follows its Input, checked on generated rows.
    assert "FIT-GENERATED-SAMPLE" in [f.code for f in result.findings], result.findings
    exported = export_fit_run(RunDir.at(tmp_path / "pairs"))
    signature = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    (spec,) = signature.structured_input_signature[1].values()
    assert spec.shape.as_list() == [None, 6] and spec.dtype == tf.float32
    rows = np.asarray(next(iter(_pairs())))[0]  # real anchors, as a client sends them
    served = next(iter(signature(tf.constant(rows)).values()))
    np.testing.assert_allclose(served.numpy(), np.asarray(model(rows, training=False)), rtol=1e-5, atol=1e-6)


def test_its_bad_batch_is_skipped_with_every_variable_finite(tmp_path):
    import tfpilot

    model = _pairs_model()
    result = tfpilot.fit(
        model, _pairs(poison=True), epochs=1, verbose=0, name="nan", runs_dir=tmp_path, nan_policy="skip_batch"
    )
    assert all(np.isfinite(np.asarray(v)).all() for v in model.variables)
    assert "TRAIN-SKIPPED-BATCHES" in [f.code for f in result.findings]
