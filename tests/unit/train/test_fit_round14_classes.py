"""A class from tfpilot.fit's held-out round 14 (keras-io's molecule generation VAE, after the
figure): a subclassed model without Inputs whose own train_step reads each batch its own way (x is
[adjacency, features, target], no y) and calls the model on two of the three arrays. Nothing in the
batches is the model's input and it declares none, so no export could be checked and the run was
not servable. Keras records the shapes of the model's first call; the export is now checked on
generated rows of those shapes and serves what model.predict computes."""

from __future__ import annotations

import numpy as np


def _graph_vae():
    import keras
    import tensorflow as tf

    class Encoder(keras.Model):
        def __init__(self):
            super().__init__()
            self.a = keras.layers.Dense(4)
            self.b = keras.layers.Dense(4)

        def call(self, inputs):
            adjacency, features = inputs
            return self.a(keras.ops.mean(adjacency, axis=1)) + self.b(keras.ops.mean(features, axis=1))

    class GraphModel(keras.Model):
        """Its __init__ takes a sub-model and has no get_config: Keras cannot rebuild it."""

        def __init__(self, encoder, **kwargs):
            super().__init__(**kwargs)
            self.encoder = encoder
            self.head = keras.layers.Dense(1)
            self.tracker = keras.metrics.Mean(name="loss")

        def call(self, inputs):
            return self.head(self.encoder(inputs))

        def train_step(self, data):
            adjacency, features, target = data[0]
            with tf.GradientTape() as tape:
                loss = keras.ops.mean((self([adjacency, features], training=True) - target) ** 2)
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights, strict=True))
            self.tracker.update_state(loss)
            return {"loss": self.tracker.result()}

    keras.utils.set_random_seed(14)
    model = GraphModel(Encoder())
    model.compile(keras.optimizers.Adam(0.01))
    return model


def test_a_subclassed_model_called_on_part_of_each_batch_is_exported_on_rows_of_its_first_calls_shapes(tmp_path):
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    rng = np.random.default_rng(14)
    adjacency = rng.normal(size=(64, 3, 5)).astype("float32")
    features = rng.normal(size=(64, 5, 2)).astype("float32")
    target = rng.normal(size=(64, 1)).astype("float32")
    model = _graph_vae()
    result = tfpilot.fit(model, [adjacency, features, target], epochs=1, batch_size=16, runs_dir=tmp_path, name="vae")
    assert "FIT-GENERATED-SAMPLE" in [finding.code for finding in result.findings]
    exported = export_fit_run(RunDir.at(tmp_path / "vae"))
    signature = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    specs = signature.structured_input_signature[1]
    assert sorted((name, spec.shape.as_list()) for name, spec in specs.items()) == [
        ("input_0", [None, 3, 5]),
        ("input_1", [None, 5, 2]),
    ]
    served = next(iter(signature(input_0=tf.constant(adjacency[:6]), input_1=tf.constant(features[:6])).values()))
    predicted = model.predict([adjacency[:6], features[:6]], verbose=0)
    np.testing.assert_allclose(served.numpy(), predicted, rtol=1e-6, atol=1e-6)


def test_a_model_with_one_sampled_output_is_served_its_deterministic_outputs_proven_and_the_sampled_one_named(
    tmp_path,
):
    """The same VAE's outputs 3 and 4 decode a sample drawn at inference (two model.predict calls
    differ): the export was refused outright. Now the outputs that do not sample are proven equal
    and the sampled ones are served as predict computes them, checked for shape and dtype."""
    import keras
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    @keras.saving.register_keras_serializable(package="tfpilot_test_round14")
    class Draw(keras.layers.Layer):
        """Samples even with training=False, as the VAE's Sampling layer does."""

        def call(self, inputs):
            return inputs + keras.random.normal(keras.ops.shape(inputs))

    keras.utils.set_random_seed(14)
    inputs = keras.Input((4,), name="features")
    mean = keras.layers.Dense(2, name="mean")(inputs)
    decoded = keras.layers.Dense(3, name="decoded")(Draw()(mean))
    model = keras.Model(inputs, {"mean": mean, "decoded": decoded})
    model.compile("adam", {"mean": "mse", "decoded": "mse"})
    rng = np.random.default_rng(14)
    x = rng.normal(size=(48, 4)).astype("float32")
    tfpilot.fit(model, x, {"mean": x[:, :2], "decoded": x[:, :3]}, epochs=1, batch_size=16, runs_dir=tmp_path, name="s")
    exported = export_fit_run(RunDir.at(tmp_path / "s"))
    assert exported.sampled_outputs == ["decoded"]
    served = tf.saved_model.load(str(exported.path)).signatures["serving_default"](features=tf.constant(x[:5]))
    np.testing.assert_allclose(served["mean"].numpy(), model.predict(x[:5], verbose=0)["mean"], rtol=1e-6, atol=1e-6)
    assert served["decoded"].shape == (5, 3)


def test_an_input_named_after_a_python_keyword_is_exported_as_key_underscore_and_served_under_both_names(tmp_path):
    """The Titanic CSV tutorial's dict of columns has `class`: TensorFlow makes every signature input
    a parameter of the serving function, and `class` cannot be one, so the export failed ("'class'
    is not a valid parameter name"). The key is `class_` now, and the server answers `class` too."""
    import keras
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir
    from tfpilot.serve.servable import load_servable

    keras.utils.set_random_seed(14)
    inputs = {"class": keras.Input((1,), name="class"), "age": keras.Input((1,), name="age")}
    merged = keras.layers.Concatenate()([inputs["class"], inputs["age"]])
    model = keras.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(merged))
    model.compile("adam", "binary_crossentropy")
    rng = np.random.default_rng(14)
    x = {"class": rng.integers(1, 4, (40, 1)).astype("float32"), "age": rng.normal(30, 10, (40, 1)).astype("float32")}
    tfpilot.fit(model, x, rng.integers(0, 2, (40, 1)), epochs=1, batch_size=8, runs_dir=tmp_path, name="titanic")
    exported = export_fit_run(RunDir.at(tmp_path / "titanic"))
    signature = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    assert sorted(signature.structured_input_signature[1]) == ["age", "class_"]
    servable = load_servable(name="titanic", version=exported.version, path=exported.path)
    info = servable.signatures["serving_default"]
    assert info.canonical({"class": [[1.0]], "age": [[20.0]]}) == {"class_": [[1.0]], "age": [[20.0]]}
    served = signature(class_=tf.constant(x["class"][:3]), age=tf.constant(x["age"][:3]))
    np.testing.assert_allclose(
        next(iter(served.values())).numpy(),
        model.predict({k: v[:3] for k, v in x.items()}, verbose=0),
        rtol=1e-6,
        atol=1e-6,
    )
