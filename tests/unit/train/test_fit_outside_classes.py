"""Classes of failure that keras-io models nobody here wrote showed in tfpilot.fit (issue 29, the
second outside round), each with a model of tfpilot's own that has the same shape."""

from __future__ import annotations

import numpy as np


def _gan_base():
    """A model with a generator, a discriminator and two optimizers of its own compile(), no call()."""
    import keras

    class GanBase(keras.Model):
        def __init__(self):
            super().__init__()
            self.generator = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8)])
            self.discriminator = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])

        def compile(self, g_optimizer, d_optimizer):
            super().compile()
            self.g_optimizer, self.d_optimizer = g_optimizer, d_optimizer
            self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    return GanBase


def test_a_gan_without_call_trains_like_model_fit_and_says_what_to_serve(tmp_path):
    """A model that drives two sub-models and two optimizers from its own train_step and defines
    no call(): model.fit never calls it, so tfpilot.fit must not either."""
    import keras
    import tensorflow as tf

    import tfpilot

    class Gan(_gan_base()):
        def train_step(self, real):
            noise = tf.random.stateless_normal((tf.shape(real)[0], 4), seed=(1, 2))
            with tf.GradientTape() as tape:
                fake = self.generator(noise, training=True)
                logits = self.discriminator(tf.concat([fake, real], 0), training=True)
                labels = tf.concat(
                    [tf.zeros_like(logits[: tf.shape(fake)[0]]), tf.ones_like(logits[tf.shape(fake)[0] :])], 0
                )
                d_loss = self.loss_fn(labels, logits)
            grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
            self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights, strict=True))
            with tf.GradientTape() as tape:
                g_loss = self.loss_fn(
                    tf.ones_like(logits[: tf.shape(real)[0]]),
                    self.discriminator(self.generator(noise, training=True), training=True),
                )
            grads = tape.gradient(g_loss, self.generator.trainable_weights)
            self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights, strict=True))
            return {"d_loss": d_loss, "g_loss": g_loss}

    real = np.random.default_rng(0).random((64, 8)).astype("float32")
    data = tf.data.Dataset.from_tensor_slices(real).batch(16)

    def build():
        keras.utils.set_random_seed(0)
        gan = Gan()
        gan.compile(keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3))
        return gan

    expected = build().fit(data, epochs=2, verbose=0).history
    result = tfpilot.fit(build(), data, epochs=2, name="gan", runs_dir=tmp_path)
    for key in ("d_loss", "g_loss"):
        np.testing.assert_allclose([row[key] for row in result.history], expected[key], rtol=1e-5)
    # steps are the GAN's own optimizers' (model.optimizer is compile()'s unused default)
    assert result.global_step == 8 and [row["step"] for row in result.history] == [4, 8]
    finding = next(f for f in result.findings if f.code == "FIT-NOTHING-TO-SERVE")
    assert "`model.generator`" in finding.fix and "`Gan`" in finding.message


def _two_optimizer_gan():
    import keras
    import tensorflow as tf

    class Gan(_gan_base()):
        def train_step(self, real):
            noise = tf.random.stateless_normal((tf.shape(real)[0], 4), seed=(1, 2))
            with tf.GradientTape() as tape:
                d_loss = tf.reduce_mean(self.discriminator(real)) - tf.reduce_mean(
                    self.discriminator(self.generator(noise))
                )
            grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
            self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights, strict=True))
            with tf.GradientTape() as tape:
                # never sees the real batch: finite even when the batch is NaN
                g_loss = tf.reduce_mean(self.discriminator(self.generator(noise)))
            grads = tape.gradient(g_loss, self.generator.trainable_weights)
            self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights, strict=True))
            return {"d_loss": d_loss, "g_loss": g_loss}

    keras.utils.set_random_seed(0)
    gan = Gan()
    gan.compile(keras.optimizers.Adam(1e-2), keras.optimizers.Adam(1e-2))
    return gan


def test_a_refused_critic_update_refuses_the_generator_update_of_the_same_batch(tmp_path):
    """Part 4: after a skipped batch every variable is as before it. The critic's gradients hold
    the batch's NaN; the generator's loss never sees the batch, so only refusing the step's later
    updates with the first keeps the generator as it was."""
    import tensorflow as tf

    import tfpilot

    real = np.random.default_rng(0).random((48, 8)).astype("float32")
    poisoned = real.copy()
    poisoned[20, 3] = np.nan  # the second batch of 16
    clean = np.concatenate([real[:16], real[32:]])

    expected = _two_optimizer_gan()
    expected.fit(tf.data.Dataset.from_tensor_slices(clean).batch(16), epochs=1, verbose=0)
    guarded = _two_optimizer_gan()
    result = tfpilot.fit(
        guarded,
        tf.data.Dataset.from_tensor_slices(poisoned).batch(16),
        epochs=1,
        name="gan",
        runs_dir=tmp_path,
        nan_policy="skip_batch",
    )
    assert any(f.code == "TRAIN-SKIPPED-BATCHES" for f in result.findings)
    for ours, theirs in zip(guarded.variables, expected.variables, strict=True):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7, err_msg=ours.path)
    assert int(guarded.g_optimizer.iterations.numpy()) == int(guarded.d_optimizer.iterations.numpy()) == 2


def test_rows_kept_to_verify_the_export_skip_the_nan_row_the_guard_skipped(tmp_path):
    """The first training rows verify the export; with a NaN among them every export looked
    unfaithful (NaN never equals NaN) or 'sampling'."""
    import keras
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,), name="x")
    model = keras.Model(inputs, keras.layers.Dense(1, name="price")(keras.layers.Dense(8)(inputs)))
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).random((64, 4)).astype("float32")
    x[2, 1] = np.nan  # in the first batch, among the rows kept for verification
    data = tf.data.Dataset.from_tensor_slices((x, x.sum(axis=1))).batch(16)
    result = tfpilot.fit(model, data, epochs=1, name="nanrow", runs_dir=tmp_path, nan_policy="skip_batch")
    assert any(f.code == "TRAIN-SKIPPED-BATCHES" for f in result.findings)
    with np.load(tmp_path / "nanrow" / "fit" / "sample_features.npz") as sample:
        kept = sample["x"]
    assert len(kept) == 8 and np.isfinite(kept).all()
    exported = export_fit_run(RunDir.at(tmp_path / "nanrow"))
    served = tf.saved_model.load(str(exported.path)).signatures["serving_default"](x=tf.constant(x[3:8]))
    # a user-named output keeps its name
    np.testing.assert_allclose(served["price"].numpy(), model.predict(x[3:8], verbose=0), rtol=1e-5)


def test_keras_counter_names_never_become_serving_output_names():
    import keras

    from tfpilot.train.fit.artifacts import stable_output_names

    def build():
        inputs = keras.Input((4,))
        return keras.Model(inputs, keras.layers.Conv1D(2, 1)(keras.layers.Reshape((4, 1))(inputs)))

    first, second = build(), build()
    # conv1d_N: how many Conv1D the process built before (the first one of a process has no suffix)
    assert first.output_names != second.output_names and second.output_names[0].startswith("conv1d_")
    assert stable_output_names(first) == stable_output_names(second) == []
    inputs = keras.Input((4,))
    named = keras.Model(
        inputs, [keras.layers.Dense(1, name="price")(inputs), keras.layers.Dense(1, name="risk")(inputs)]
    )
    assert stable_output_names(named) == ["price", "risk"]


def test_a_layer_whose_init_refuses_keras_base_config_is_named_with_the_right_fix(tmp_path):
    import keras

    from tfpilot.rundir import RunDir
    from tfpilot.train.fit.artifacts import save_model

    @keras.saving.register_keras_serializable(package="tfpilot_tests")
    class Endpoint(keras.layers.Layer):
        def __init__(self, name=None):
            super().__init__(name=name)

        def call(self, x):
            return x * 2.0

    inputs = keras.Input((3,))
    finding = save_model(keras.Model(inputs, Endpoint(name="ep")(inputs)), RunDir.at(tmp_path))
    assert finding is not None and finding.code == "FIT-MODEL-NOT-SAVED"
    assert "`Endpoint`" in finding.message and "refuses `trainable`" in finding.message
    assert "**kwargs" in finding.fix


# Third outside round (keras-io WGAN-GP and others): classes below.


def _raw_loss_model():
    """A subclassed model whose own train_step returns its raw batch loss, not a metric result
    (WGAN-GP returns {"d_loss": d_loss, "g_loss": g_loss} this way)."""
    import keras
    import tensorflow as tf

    class RawLoss(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            return {"raw_loss": loss}

    keras.utils.set_random_seed(0)
    model = RawLoss()
    model.compile(optimizer=keras.optimizers.SGD(0.01))
    return model


def test_a_skipped_step_reports_the_last_good_value_of_a_log_that_is_no_metric(tmp_path):
    """A raw log of a skipped step held its NaN, and when that step was the epoch's last, the
    epoch's history said NaN for a batch that never trained. It reports what model.fit reports
    on the data without that batch: the last good step's value."""
    import tfpilot

    rng = np.random.default_rng(0)
    x, y = rng.random((48, 3)).astype("float32"), rng.random((48, 1)).astype("float32")
    poisoned = x.copy()
    poisoned[40, 1] = np.nan  # in the last batch of 16 of each epoch
    expected = _raw_loss_model().fit(x[:32], y[:32], batch_size=16, epochs=2, shuffle=False, verbose=0).history
    result = tfpilot.fit(
        _raw_loss_model(),
        poisoned,
        y,
        batch_size=16,
        epochs=2,
        shuffle=False,
        nan_policy="skip_batch",
        name="raw",
        runs_dir=tmp_path,
    )
    got = [row["raw_loss"] for row in result.history]
    assert all(np.isfinite(got))
    np.testing.assert_allclose(got, expected["raw_loss"], rtol=1e-6)


def test_history_steps_count_training_steps_not_optimizer_updates(tmp_path):
    """WGAN-GP's critic applies its optimizer 3 times a batch: steps read from the optimizers'
    iterations said 3x the batches run. A skipped batch trains no step."""
    import keras
    import tensorflow as tf

    import tfpilot

    class Critic3(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            for _ in range(3):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
                grads = tape.gradient(loss, self.trainable_variables)
                self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            return {"loss": loss}

    keras.utils.set_random_seed(0)
    model = Critic3()
    model.compile(optimizer=keras.optimizers.SGD(0.01))
    rng = np.random.default_rng(1)
    x, y = rng.random((64, 3)).astype("float32"), rng.random((64, 1)).astype("float32")
    x[5, 0] = np.nan  # the first batch of every epoch is skipped
    result = tfpilot.fit(
        model, x, y, batch_size=16, epochs=2, shuffle=False, nan_policy="skip_batch", name="c3", runs_dir=tmp_path
    )
    assert [row["step"] for row in result.history] == [3, 6]
    assert result.global_step == 6
    assert int(model.optimizer.iterations.numpy()) == 18  # 3 updates in each of the 6 trained steps


def test_export_of_a_fit_run_with_nothing_to_serve_says_why_not_finish_tfpilot_train(tmp_path):
    """A GAN without call() trains, but there is no forward pass to serve; `tfpilot export RUN`
    took the run for an unfinished `tfpilot train` run ("finish `tfpilot train` first")."""
    import keras
    import pytest
    import tensorflow as tf

    import tfpilot
    from tfpilot.errors import ConfigError
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir
    from tfpilot.train.fit import evaluate_fit_run

    class NoCall(keras.Model):
        def __init__(self):
            super().__init__()
            self.inner = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self.inner(x, training=True) - y))
            grads = tape.gradient(loss, self.inner.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.inner.trainable_variables, strict=True))
            return {"loss": loss}

    model = NoCall()
    model.compile(optimizer="sgd")
    rng = np.random.default_rng(2)
    tfpilot.fit(model, rng.random((32, 3)), rng.random((32, 1)), batch_size=16, name="nocall", runs_dir=tmp_path)
    run = RunDir.existing(tmp_path / "nocall")
    assert run.is_fit_run()
    for use in (lambda: export_fit_run(run), lambda: evaluate_fit_run(run)):
        with pytest.raises(ConfigError) as caught:
            use()
        assert "FIT-NOTHING-TO-SERVE" in str(caught.value) and "`model.inner`" in str(caught.value)
        assert "tfpilot train" not in str(caught.value)


def test_a_subclassed_model_with_plain_arguments_is_not_blamed_on_sub_model_arguments(tmp_path):
    """keras-io's RecommenderNet takes only numbers, yet Keras cannot rebuild it: Keras records no
    __init__ arguments of a subclassed Model. The finding said the arguments were sub-models or
    layers; a layer with such arguments keeps that cause."""
    import keras

    from tfpilot.rundir import RunDir
    from tfpilot.train.fit.artifacts import save_model

    class Recommender(keras.Model):
        def __init__(self, num_users, embedding_size, **kwargs):
            super().__init__(**kwargs)
            self.embedding = keras.layers.Embedding(num_users, embedding_size)

        def call(self, ids):
            return keras.ops.sum(self.embedding(ids), axis=-1)

    model = Recommender(10, 4)
    model(np.zeros((2,), dtype="int64"))
    finding = save_model(model, RunDir.at(tmp_path / "model"))
    assert finding is not None and finding.code == "FIT-MODEL-NOT-SAVED"
    assert "`Recommender`" in finding.message and "subclassed Model" in finding.message
    assert "sub-models or layers" not in finding.message and "get_config()" in finding.fix

    class Wrapper(keras.layers.Layer):
        def __init__(self, inner, **kwargs):
            super().__init__(**kwargs)
            self.inner = inner

        def call(self, x):
            return self.inner(x)

    inputs = keras.Input((3,))
    wrapped = keras.Model(inputs, Wrapper(keras.layers.Dense(2))(inputs))
    finding = save_model(wrapped, RunDir.at(tmp_path / "wrapped"))
    assert finding is not None and "`Wrapper`" in finding.message and "not sub-models or layers" in finding.message


def test_an_input_keras_cloned_from_an_intermediate_tensor_gets_a_stable_serving_name():
    """keras-io's FeatureSpace example trains a model whose input is an intermediate tensor
    (feature_space.get_encoded_features()); Keras names the Input it makes for it after that
    tensor plus "CLONE", and `keras_tensor_80CLONE` became the served input's name."""
    import keras
    import tensorflow as tf

    from tfpilot.train.fit.artifacts import signature_inputs

    def build():
        raw = keras.Input((3,))
        encoded = keras.layers.Dense(4)(raw)  # an intermediate tensor, as FeatureSpace hands out
        return keras.Model(encoded, keras.layers.Dense(1)(encoded))

    first, second = build(), build()
    assert first.inputs[0].name.endswith("CLONE") and first.inputs[0].name != second.inputs[0].name
    spec = tf.TensorSpec((None, 4), tf.float32)
    assert [i["name"] for i in signature_inputs(first, spec)] == ["inputs"]
    assert signature_inputs(first, spec) == signature_inputs(second, spec)


def test_a_nan_in_one_of_a_list_of_inputs_is_named_as_the_signature_names_it():
    """keras-io's lstm_seq2seq trains on [encoder_input, decoder_input]; the finding said the NaN
    was in input `0`, the served signature calls that input `input_0`."""
    from tfpilot.train.guard import nonfinite_inputs

    encoder, decoder = np.zeros((4, 3, 2), "float32"), np.zeros((4, 5, 2), "float32")
    decoder[2, 1, 0] = np.nan
    found = nonfinite_inputs(([encoder, decoder], np.zeros((4, 5, 2), "float32")))
    assert found is not None and found["input"] == "input_1" and found["input_rows"] == [2]
    found = nonfinite_inputs(({"tags": decoder}, np.zeros((4, 1), "float32")))
    assert found is not None and found["input"] == "tags"


def test_serving_inputs_take_the_dtypes_the_models_inputs_declare(tmp_path):
    """Integer CSV columns fed to float32 Inputs (the model converts them at its Inputs, as
    model.export() serves them): the signature takes float32, so a JSON client's 108.0 is accepted;
    a string Input keeps DT_STRING, and a subclassed model (no declared Inputs) keeps the data's."""
    import keras
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    keras.utils.set_random_seed(0)
    aspect = keras.Input((), name="aspect", dtype="float32")
    area = keras.Input((), name="area", dtype="string")
    index = keras.layers.StringLookup(vocabulary=["north", "south"])(area)
    joined = keras.layers.Concatenate()(
        [keras.ops.expand_dims(aspect, -1), keras.ops.expand_dims(keras.ops.cast(index, "float32"), -1)]
    )
    model = keras.Model({"aspect": aspect, "area": area}, keras.layers.Dense(1, name="out")(joined))
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    features = {
        "aspect": rng.integers(0, 360, 64).astype("int32"),
        "area": rng.choice(np.array([b"north", b"south"]), 64),
    }
    data = tf.data.Dataset.from_tensor_slices((features, rng.random(64).astype("float32"))).batch(16)
    tfpilot.fit(model, data, epochs=1, name="declared", runs_dir=tmp_path)
    exported = export_fit_run(RunDir.at(tmp_path / "declared"))
    signature = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    specs = signature.structured_input_signature[1]
    assert specs["aspect"].dtype == tf.float32 and specs["area"].dtype == tf.string
    served = signature(aspect=tf.constant([108.0, 20.0]), area=tf.constant([b"north", b"south"]))
    expected = model.predict(
        {"aspect": tf.constant([108, 20], tf.int32), "area": tf.constant([b"north", b"south"])}, verbose=0
    )
    np.testing.assert_allclose(served["out"].numpy(), expected, rtol=1e-5)


def test_a_model_without_declared_inputs_serves_the_dtypes_its_step_received():
    import keras
    import tensorflow as tf

    from tfpilot.train.fit.api import _serving_dtypes

    class Scaled(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, x):
            return self.dense(keras.ops.cast(x, "float32"))

    ints = tf.constant([[1, 2]], tf.int32)
    assert _serving_dtypes(Scaled(), ints).dtype == tf.int32
    assert _serving_dtypes(Scaled(), tf.constant([[1.0, 2.0]], tf.float64)).dtype == tf.float32
    declared = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    assert _serving_dtypes(declared, ints).dtype == tf.float32
