"""Classes found by this session's own fit probes and held-out fit round 18 (after its figure was taken).

- A conditional GAN whose own train_step reads a dict of images and labels and whose `call` delegates to its
  functional generator: the call never ran in training, so the model declares no Inputs and has no first
  call; the export was refused ("the model fails on the run's sample rows"). The serving signature now
  follows the Inputs of the first functional sub-model that the model's call computes on.
- A Sequential without an Input compiled with run_eagerly=True: Keras builds it on the first eager batch and
  records that batch (20) in its InputLayer, although the model computes on any number of rows; the
  signature fixed the batch at 20 and every request of another size failed in the session loader.
"""

from __future__ import annotations

import numpy as np
import pytest

keras = pytest.importorskip("keras")
tf = pytest.importorskip("tensorflow")

import tfpilot  # noqa: E402
from tfpilot.export.fit_model import export_fit_run  # noqa: E402
from tfpilot.rundir import RunDir  # noqa: E402


@keras.saving.register_keras_serializable(package="tfpilot_tests_r18")
class ConditionalGan(keras.Model):
    """Generator [noise, label] -> sample; discriminator [sample, label] -> logit; two optimizers of its own."""

    def __init__(self, latent: int = 6, **kwargs):
        super().__init__(**kwargs)
        self.latent = latent
        noise, label = keras.Input((latent,)), keras.Input(())
        embedded = keras.layers.Embedding(3, 4)(label)
        sample = keras.layers.Dense(5, activation="tanh")(keras.layers.Concatenate()([noise, embedded]))
        self.generator = keras.Model([noise, label], sample)
        seen, seen_label = keras.Input((5,)), keras.Input(())
        joined = keras.layers.Concatenate()([seen, keras.layers.Embedding(3, 4)(seen_label)])
        self.discriminator = keras.Model([seen, seen_label], keras.layers.Dense(1)(joined))

    def compile(self, d_optimizer, g_optimizer):
        super().compile()
        self.d_optimizer, self.g_optimizer = d_optimizer, g_optimizer
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    def call(self, inputs):
        return self.generator(inputs)

    def train_step(self, batch):
        real, labels = batch["samples"], tf.cast(batch["labels"], "float32")
        n = tf.shape(real)[0]
        noise = tf.random.normal((n, self.latent), seed=1)
        with tf.GradientTape() as tape:
            fake = self.generator([noise, labels])
            logits = tf.concat([self.discriminator([fake, labels]), self.discriminator([real, labels])], 0)
            d_loss = self.loss_fn(tf.concat([tf.ones((n, 1)), tf.zeros((n, 1))], 0), logits)
        weights = self.discriminator.trainable_weights
        self.d_optimizer.apply_gradients(zip(tape.gradient(d_loss, weights), weights, strict=True))
        with tf.GradientTape() as tape:
            g_loss = self.loss_fn(tf.zeros((n, 1)), self.discriminator([self.generator([noise, labels]), labels]))
        weights = self.generator.trainable_weights
        self.g_optimizer.apply_gradients(zip(tape.gradient(g_loss, weights), weights, strict=True))
        return {"d_loss": d_loss, "g_loss": g_loss}

    def get_config(self):
        return {"latent": self.latent, **super().get_config()}


def test_a_gan_whose_call_never_ran_in_training_is_served_through_its_generators_inputs(tmp_path):
    keras.utils.set_random_seed(18)
    gan = ConditionalGan()
    gan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3))
    rng = np.random.default_rng(18)
    data = tf.data.Dataset.from_tensor_slices(
        {"samples": rng.normal(size=(64, 5)).astype("float32"), "labels": rng.integers(0, 3, 64).astype("uint8")}
    ).batch(16)
    tfpilot.fit(gan, data, epochs=1, runs_dir=tmp_path, name="gan", verbose=0)
    exported = export_fit_run(RunDir.at(tmp_path / "gan"))
    signature = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    shapes = sorted(spec.shape.as_list() for spec in signature.structured_input_signature[1].values())
    assert shapes == [[None], [None, 6]]  # the label column and the noise: the generator's two Inputs
    noise = rng.normal(size=(4, 6)).astype("float32")
    labels = np.array([0, 1, 2, 0], dtype="float32")
    expected = gan.predict([noise, labels], verbose=0)
    keys = sorted(
        signature.structured_input_signature[1], key=lambda k: len(signature.structured_input_signature[1][k].shape)
    )
    served = signature(**{keys[0]: tf.constant(labels), keys[1]: tf.constant(noise)})
    np.testing.assert_allclose(next(iter(served.values())).numpy(), expected, atol=1e-5)


def test_an_eagerly_built_sequential_serves_any_number_of_rows(tmp_path):
    keras.utils.set_random_seed(19)
    model = keras.Sequential([keras.layers.Dense(6, activation="relu"), keras.layers.Dense(2, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", run_eagerly=True)
    rng = np.random.default_rng(19)
    x = rng.normal(size=(60, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    tfpilot.fit(model, tf.data.Dataset.from_tensor_slices((x, y)).batch(20), epochs=1, runs_dir=tmp_path, name="s")
    assert model.inputs[0].shape[0] == 20  # what Keras recorded from the first eager batch
    exported = export_fit_run(RunDir.at(tmp_path / "s"))
    signature = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    [spec] = signature.structured_input_signature[1].values()
    assert spec.shape.as_list() == [None, 4]
    served = next(iter(signature(**{next(iter(signature.structured_input_signature[1])): tf.constant(x[:3])}).values()))
    np.testing.assert_allclose(served.numpy(), model.predict(x[:3], verbose=0), atol=1e-6)
