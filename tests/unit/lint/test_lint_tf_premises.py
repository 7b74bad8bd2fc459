"""Each lint rule's premise, run on the installed TensorFlow and Keras.

A rule claims "TensorFlow does X here". These tests run X: when a TensorFlow release changes the
behaviour, the rule's test fails here instead of the rule quietly going wrong on users' code.
"""

from __future__ import annotations

import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.data.experimental.ops import testing as tf_data_testing

from tfpilot.lint.engine import lint_source

# (name, the map function's definition binding `fn`, stateful?) - TFP301 must fire exactly on
# the stateful ones, and TensorFlow must keep exactly those maps sequential.
MAP_FUNCTIONS = [
    ("arithmetic", "fn = lambda x: x * 2", False),
    ("strings", "fn = lambda x: tf.strings.as_string(x)", False),
    ("stateless random", "fn = lambda x: x + tf.random.stateless_uniform([], (1, 2), 0, 5, tf.int64)", False),
    ("reshape def", "def fn(x):\n    return tf.reshape(tf.cast(x, tf.float32), [1])", False),
    ("py_function", "fn = lambda x: tf.py_function(lambda v: v, [x], tf.int64)", True),
    ("numpy_function", "fn = lambda x: tf.numpy_function(lambda v: v, [x], tf.int64)", True),
    ("random.uniform", "fn = lambda x: x + tf.random.uniform([], 0, 5, tf.int64)", True),
    (
        "image.random_* in a def",
        "def fn(x):\n    image = tf.reshape(tf.cast(x, tf.float32), [1, 1, 1])\n"
        "    return tf.image.random_flip_left_right(image)",
        True,
    ),
    (
        "helper called by the map function",
        "def helper(x):\n    return x + tf.random.uniform([], 0, 5, tf.int64)\n\ndef fn(x):\n    return helper(x)",
        True,
    ),
    (
        "Keras augmentation Sequential",
        "augment = keras.Sequential([keras.layers.RandomFlip()])\n"
        "fn = lambda x: augment(tf.fill([1, 2, 2, 1], tf.cast(x, tf.float32)), training=True)",
        True,
    ),
    (
        "a literal argument picks the branch without random ops",
        "def augment(x, mode='train'):\n    if mode == 'train':\n"
        "        return x + tf.random.uniform([], 0, 5, tf.int64)\n    return x * 2\n\n"
        "fn = lambda x: augment(x, mode='eval')",
        False,
    ),
    (
        "... and the default picks the random one",
        "def augment(x, mode='train'):\n    if mode == 'train':\n"
        "        return x + tf.random.uniform([], 0, 5, tf.int64)\n    return x * 2\n\n"
        "fn = lambda x: augment(x)",
        True,
    ),
    (
        "Keras lookup layer",
        "lookup = keras.layers.IntegerLookup(vocabulary=[1, 2, 3])\nfn = lambda x: lookup(x)",
        True,
    ),
]


def _stays_sequential(dataset_fn) -> bool:
    dataset = tf.data.Dataset.range(4).apply(tf_data_testing.assert_next(["ParallelMap"])).map(dataset_fn)
    try:
        list(dataset)
    except tf.errors.InvalidArgumentError as error:
        assert "Asserted transformation matching ParallelMap" in str(error)
        return True
    return False


@pytest.mark.parametrize("name,definition,stateful", MAP_FUNCTIONS, ids=[row[0] for row in MAP_FUNCTIONS])
def test_tfp301_fires_exactly_where_tensorflow_keeps_the_map_sequential(name, definition, stateful):
    source = f"import keras\nimport tensorflow as tf\n\n{definition}\n\nds = tf.data.Dataset.range(4).map(fn)\n"
    namespace = {"tf": tf, "keras": keras}
    exec(compile(textwrap.dedent(source), f"<{name}>", "exec"), namespace)
    assert _stays_sequential(namespace["fn"]) is stateful, "TensorFlow's own behaviour changed"
    codes = [finding.code for finding in lint_source(source, path="premise.py")]
    assert ("TFP301" in codes) is stateful, codes


def test_tfp301_interleave_is_never_parallelised_by_tensorflow():
    dataset = (
        tf.data.Dataset.range(4)
        .apply(tf_data_testing.assert_next(["Interleave"]))
        .interleave(lambda x: tf.data.Dataset.range(x), cycle_length=2)
    )
    assert sorted(int(v) for v in dataset) == [0, 0, 0, 1, 1, 2]


# (snippet run with a built `model` and a writable `root`, the rule that must report it): Keras 3
# refuses each one with ValueError, so the rules that say so are errors.
KERAS3_REFUSALS = [
    ('checkpoint_path = root + "/cp.ckpt"\nmodel.save_weights(checkpoint_path)', "TFP406"),
    (
        'checkpoint_path = root + "/cp.ckpt"\n'
        "keras.callbacks.ModelCheckpoint(filepath=checkpoint_path, save_weights_only=True)",
        "TFP406",
    ),
    ('keras.callbacks.ModelCheckpoint(root + "/best_model", save_best_only=True)', "TFP403"),
    ('model.save(root + "/exported_model")', "TFP403"),
]


@pytest.mark.parametrize("snippet,code", KERAS3_REFUSALS, ids=[row[1] + ":" + row[0][:30] for row in KERAS3_REFUSALS])
def test_keras3_refusals_raise_and_are_reported(snippet, code, tmp_path):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    with pytest.raises(ValueError):
        exec(snippet, {"keras": keras, "model": model, "root": str(tmp_path)})
    source = f"import keras\n\nmodel = keras.Sequential([keras.layers.Dense(1)])\nroot = 'runs'\n{snippet}\n"
    assert code in [finding.code for finding in lint_source(source, path="premise.py")]


def test_tfp205_only_a_persistent_tape_keeps_recording_after_gradient_inside_its_block():
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = x * x
        tape.gradient(y, x)
        assert not tape._recording  # non-persistent: gradient() popped the tape, nothing more is recorded
    with tf.GradientTape(persistent=True) as persistent:
        y = x * x
        persistent.gradient(y, x)
        assert persistent._recording  # the backward pass was recorded, and what follows is too
    source = (
        "import tensorflow as tf\nx = tf.Variable(2.0)\n"
        "with tf.GradientTape() as a:\n    y = x * x\n    g = a.gradient(y, x)\n"
        "with tf.GradientTape(persistent=True) as b:\n    y = x * x\n    g = b.gradient(y, x)\n"
    )
    assert [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP205"] == ["8"]


def test_tfp507_keras3_refuses_a_positional_training_flag():
    class Generator(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, x, training=None):
            return self.dense(x)

    generator, x = Generator(), np.ones((2, 3), "float32")
    assert generator(x, training=True).shape == (2, 2)
    is_training = True
    with pytest.raises(ValueError, match="Only input tensors may be passed as positional arguments"):
        generator(x, is_training)
    source = (
        "import keras\n\nclass Generator(keras.Model):\n    def call(self, x, training=None):\n        return x\n\n"
        "generator = Generator()\nis_training = True\ny = generator(x, is_training)\n"
    )
    assert [f.code for f in lint_source(source, path="p.py") if f.code == "TFP507"] == ["TFP507"]


def test_tfp101_a_python_or_numpy_draw_in_a_traced_function_is_drawn_once():
    import numpy as np

    # A map function's np.random draw is made while tracing: every element gets the same value.
    values = list(
        tf.data.Dataset.range(5).map(lambda x: tf.cast(x, tf.float64) * 0 + np.random.normal()).as_numpy_iterator()
    )
    assert len(set(values)) == 1, "TensorFlow's own behaviour changed"
    draws = []

    @tf.function
    def step():
        draws.append(np.random.randint(0, 1000))
        return tf.constant(draws[-1])

    assert len({int(step()) for _ in range(4)}) == 1 and len(draws) == 1
    source = (
        "import numpy as np\nimport tensorflow as tf\n\n@tf.function\ndef step(x):\n"
        "    return x + np.random.randint(0, 4)\n\ndef noisy(x):\n    return x + np.random.rand()\n\n"
        "ds = tf.data.Dataset.range(3).map(noisy)\n"
    )
    assert [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP101"] == ["6", "9"]


def _codes(source: str, code: str) -> list[int]:
    found = lint_source(textwrap.dedent(source), path="premise.py")
    return [int(f.location.split(":")[-2]) for f in found if f.code == code]


def test_tfp504_keras3_removed_layer_node_methods_and_fit_worker_arguments():
    layer = keras.layers.Dense(2)
    for method in ("get_input_shape_at", "get_output_shape_at", "get_input_at", "get_output_at"):
        assert not hasattr(layer, method), method
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(loss="mse")
    x, y = np.ones((4, 3), "float32"), np.ones((4, 2), "float32")
    with pytest.raises(TypeError, match="use_multiprocessing"):
        model.fit(x, y, use_multiprocessing=False, verbose=0)
    with pytest.raises((TypeError, ValueError), match="workers"):
        model.evaluate(x, y, workers=2, verbose=0)
    with pytest.raises(TypeError, match="max_queue_size"):
        model.predict(x, max_queue_size=2, verbose=0)
    source = """
        import keras

        shape = model.layers[0].get_input_shape_at(0)
        model.fit(x, y, use_multiprocessing=False)
    """
    assert _codes(source, "TFP504") == [4, 5]


def test_tfp504_keras3_load_weights_returns_none(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    path = str(tmp_path / "m.weights.h5")
    model.save_weights(path)
    assert model.load_weights(path) is None  # so `.expect_partial()` raises AttributeError
    source = "import keras\n\nmodel.load_weights(path).expect_partial()\n"
    assert _codes(source, "TFP504") == [3]


def test_tfp504_keras3_refuses_tensorflow_ops_and_add_loss_on_keras_tensors():
    from tensorflow.keras import backend as K

    inputs = keras.Input((3,))
    outputs = keras.layers.Dense(3)(inputs)
    for op in (K.square, tf.square, K.exp):
        with pytest.raises(ValueError, match="A KerasTensor cannot be used as input to a TensorFlow function"):
            op(outputs)
    loss = keras.ops.mean(keras.ops.square(inputs - outputs))  # Keras 3's own ops take KerasTensors
    model = keras.Model(inputs, outputs)
    with pytest.raises(NotImplementedError):
        model.add_loss(loss)
    source = """
        from tensorflow.keras import backend as K
        from tensorflow.keras.layers import Dense, Input
        from tensorflow.keras.models import Model

        inputs = Input((3,))
        outputs = Dense(3)(inputs)
        model = Model(inputs, outputs)
        square = K.square(outputs)
        model.add_loss(K.mean(square))
    """
    assert _codes(source, "TFP504") == [9, 10]


def test_tfp508_keras3_freezes_a_discriminator_set_untrainable_before_its_first_train_on_batch():
    x, y = np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")

    def discriminator_after(freeze_before_first_step: bool) -> bool:
        discriminator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        discriminator.compile(loss="mse", optimizer="sgd")
        if not freeze_before_first_step:
            discriminator.train_on_batch(x, y)
        discriminator.trainable = False
        noise = keras.Input((3,))
        generator = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        adversarial = keras.Model(noise, discriminator(generator(noise)))
        adversarial.compile(loss="mse", optimizer="sgd")
        before = [w.numpy().copy() for w in discriminator.weights]
        if freeze_before_first_step:
            with pytest.warns(UserWarning, match="does not have any trainable weights"):
                discriminator.train_on_batch(x, y)
        else:
            discriminator.train_on_batch(x, y)
        trained = any(not np.allclose(a, b.numpy()) for a, b in zip(before, discriminator.weights, strict=True))
        # the fix the rule names: the combined model's steps still leave the discriminator alone
        after_own_step = [w.numpy().copy() for w in discriminator.weights]
        adversarial.train_on_batch(np.ones((4, 3), "float32"), np.ones((4, 1), "float32"))
        assert all(np.allclose(a, b.numpy()) for a, b in zip(after_own_step, discriminator.weights, strict=True))
        return trained

    assert not discriminator_after(freeze_before_first_step=True)  # Keras 2's recipe: never trains
    assert discriminator_after(freeze_before_first_step=False)
    source = """
        import keras

        discriminator = keras.Sequential([keras.layers.Dense(1)])
        discriminator.compile(loss="mse", optimizer="sgd")
        discriminator.trainable = False
        discriminator.train_on_batch(x, y)
    """
    assert _codes(source, "TFP508") == [6]


def test_tfp507_keras3_refuses_any_positional_python_value_but_not_none_or_tensors():
    # round 5: the flag need not be called `training` (`self.actor(state, test)`); None passes
    class Actor(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)

        def call(self, states, test=False):
            return self.dense(states)

    actor, x = Actor(), np.ones((1, 3), "float32")
    for value in (True, 1, 1.5, "greedy"):
        with pytest.raises(ValueError, match="Only input tensors may be passed as positional arguments"):
            actor(x, value)
    assert actor(x, None).shape == (1, 2)
    assert actor(x, tf.constant(True)).shape == (1, 2)  # a tensor flag passes positionally
    source = textwrap.dedent(
        """
        import keras

        class Actor(keras.Model):
            def call(self, states, test=False):
                return states

        class Agent:
            def __init__(self):
                self.actor = Actor()

            def get_action(self, state, test=False):
                return self._body(state, test)

            def _body(self, state, test):
                return self.actor(state, test)

            def masked(self, state, mask=None):
                return self.actor(state, mask)
        """
    )
    assert [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP507"] == ["16"]


def test_tfp406_keras3_refuses_weights_paths_that_end_in_a_step_number(tmp_path):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    with pytest.raises(ValueError, match=r"\.weights\.h5"):
        model.save_weights(str(tmp_path / "weights_step_10"))
    with pytest.raises(ValueError, match="File format not supported"):
        model.load_weights(str(tmp_path / "model_epoch_3"))
    model.save_weights(str(tmp_path / "weights_step_10.weights.h5"))
    source = textwrap.dedent(
        """
        import os
        import keras

        def train(model, model_dir, step):
            model.save_weights(os.path.join(model_dir, "weights_step_{}".format(step)))
            model.save_weights(os.path.join(model_dir, "weights_step_{}.weights.h5".format(step)))
        """
    )
    assert [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP406"] == ["6"]


def test_tfp504_keras3_removed_predict_classes_layer_output_shape_and_loss_scale_methods():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    assert not hasattr(model, "predict_classes")
    assert not hasattr(model.layers[0], "output_shape")
    assert hasattr(model, "output_shape")  # a model still has one: only layers are reported
    optimizer = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.Adam())
    assert not hasattr(optimizer, "get_scaled_loss") and not hasattr(optimizer, "get_unscaled_gradients")
    assert hasattr(optimizer, "scale_loss")  # what the finding tells users to call instead


@pytest.mark.parametrize("seed", [None, 7])
def test_tfp308_take_and_skip_of_a_reshuffling_dataset_overlap(seed):
    # shuffle() reshuffles per iteration by default, and take/skip each iterate it anew: over a
    # few reads the "test" split shares examples with the "train" split, seeded or not
    ds = tf.data.Dataset.range(100).shuffle(100, seed=seed)
    test, train = ds.take(20), ds.skip(20)
    seen_in_test = {int(x) for _ in range(3) for x in test}
    seen_in_train = {int(x) for _ in range(3) for x in train}
    assert seen_in_test & seen_in_train
    fixed = tf.data.Dataset.range(100).shuffle(100, reshuffle_each_iteration=False)
    fixed_test = {int(x) for _ in range(3) for x in fixed.take(20)}
    assert not fixed_test & {int(x) for _ in range(3) for x in fixed.skip(20)}
    source = f"import tensorflow as tf\nds = tf.data.Dataset.range(100).shuffle(100, seed={seed})\ntest = ds.take(20)\ntrain = ds.skip(20)\n"
    assert [f.code for f in lint_source(source, path="p.py") if f.code == "TFP308"] == ["TFP308"]


def test_tfp504_keras3_refuses_int_input_shapes_positional_layer_init_and_optimizer_lr():
    # Keras 2 took `Input(shape=512)`; Keras 3 only a tuple (`(1)` is the int 1)
    for shape in (512, (1)):
        with pytest.raises(ValueError, match="Cannot convert"):
            keras.Input(shape=shape)

    class Scale(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(kwargs)

    class Net(keras.Model):
        def __init__(self, **kwargs):
            super().__init__(kwargs)

    for made in (Scale, Net):
        with pytest.raises(TypeError, match="positional argument"):
            made(name="x")
    optimizer = keras.optimizers.Adam(0.01)
    assert not hasattr(optimizer, "lr")
    optimizer.lr = 0.5  # Keras 2's setter changed the rate; Keras 3 keeps a plain attribute
    assert float(optimizer.learning_rate) == pytest.approx(0.01)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    assert not hasattr(model.layers[0], "input_shape")
    assert hasattr(model, "input_shape")  # a model still has one: only layers are reported
    source = textwrap.dedent(
        """
        import keras

        class Scale(keras.layers.Layer):
            def __init__(self, **kwargs):
                super().__init__(kwargs)

        z = keras.Input(shape=512)
        optimizer = keras.optimizers.Adam(0.01)
        print(optimizer.lr)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        print(model.layers[0].input_shape, model.input_shape)
        """
    )
    lines = [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP504"]
    assert lines == ["6", "8", "10", "12"]


def test_tfp504_a_positional_argument_to_a_project_class_between_is_that_class_s_own():
    """super().__init__(config) in a subclass of the project's own Layer reaches that class's
    __init__(self, config, **kwargs), which passes only keywords to Keras: it runs on Keras 3."""

    class Encoder(keras.layers.Layer):
        def __init__(self, config, **kwargs):
            super().__init__(**kwargs)
            self.units = config

    class Decoder(Encoder):
        def __init__(self, config, **kwargs):
            super().__init__(config, **kwargs)

    assert Decoder(4, name="decoder").units == 4
    source = textwrap.dedent(
        """
        import tensorflow as tf

        class Encoder(tf.keras.layers.Layer):
            def __init__(self, config, **kwargs):
                super().__init__(**kwargs)

        class Decoder(Encoder):
            def __init__(self, config, **kwargs):
                super().__init__(config, **kwargs)

        class Broken(tf.keras.layers.Layer):
            def __init__(self, config, **kwargs):
                super().__init__(config, **kwargs)
        """
    )
    lines = [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP504"]
    assert lines == ["14"]


def test_tfp509_keras2_only_libraries_fail_on_keras3():
    import importlib

    # TensorFlow Addons' utils/types.py imports this for TF >= 2.13 (tensorflow/addons#2865):
    # Keras 3 has no such module, so `import tensorflow_addons` fails on TF 2.16+
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("keras.src.engine")
    # TensorFlow's private Keras 2 copy: its layers are no Keras 3 layers and its fit() fails
    legacy_layers = importlib.import_module("tensorflow.python.keras.layers")
    legacy_models = importlib.import_module("tensorflow.python.keras.models")
    inputs = legacy_layers.Input(shape=(3,))
    model = legacy_models.Model(inputs, legacy_layers.Dense(2)(inputs))
    assert not isinstance(model, keras.Model)
    with pytest.raises(ValueError, match="keras.Layer"):
        keras.Sequential([keras.Input((3,)), legacy_layers.Dense(2)])
    with pytest.raises(ValueError, match="optimizer"):
        model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    model.compile(optimizer="adam", loss="mse")
    with pytest.raises(AttributeError):
        model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    source = "import tensorflow_addons as tfa\nfrom tensorflow.python.keras.layers import Dense\n"
    assert [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP509"] == ["1", "2"]


def test_tfp207_predict_costs_far_more_per_call_than_calling_the_model():
    import time

    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(2)])
    state = np.ones((1, 8), dtype="float32")
    model.predict(state, verbose=0), model(state, training=False)  # build both paths once

    def per_call(run) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(10):
                run()
            best = min(best, (time.perf_counter() - start) / 10)
        return best

    predicted = per_call(lambda: model.predict(state, verbose=0))
    called = per_call(lambda: model(state, training=False))
    # Keras documents predict as batch machinery "not intended for use inside of loops";
    # on one state its setup is most of the time (typically 10-50x here)
    assert predicted > 3 * called, (predicted, called)
    source = textwrap.dedent(
        """
        import keras

        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
        for state in states:
            q = model.predict(state)
        """
    )
    assert [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP207"] == ["6"]


def test_tfp508_keras3_trains_a_discriminator_unfrozen_after_the_combined_compile():
    # Keras 2 froze the discriminator inside the combined model at its compile; Keras 3 reads the
    # flag when the combined model's train function is built (its first train_on_batch)
    def combined_step_moves_discriminator(unfreeze: bool) -> bool:
        discriminator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        discriminator.trainable = False
        noise = keras.Input((3,))
        generator = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        combined = keras.Model(noise, discriminator(generator(noise)))
        combined.compile(loss="mse", optimizer="sgd")
        if unfreeze:
            discriminator.trainable = True
        before = [w.numpy().copy() for w in discriminator.weights]
        combined.train_on_batch(np.ones((4, 3), "float32"), np.ones((4, 1), "float32"))
        return any(not np.allclose(a, b.numpy()) for a, b in zip(before, discriminator.weights, strict=True))

    assert combined_step_moves_discriminator(unfreeze=True)
    assert not combined_step_moves_discriminator(unfreeze=False)
    source = """
        import keras

        discriminator.trainable = False
        combined = keras.Model(noise, discriminator(generator(noise)))
        combined.compile(loss="mse", optimizer="sgd")
        discriminator.trainable = True
        combined.train_on_batch(z, y)
    """
    assert _codes(source, "TFP508") == [7]


def test_tfp615_tf2_dropout_takes_the_rate_dropped_not_keep_prob():
    kept = float(tf.reduce_mean(tf.cast(tf.nn.dropout(tf.ones([10000]), 0.9, seed=1) > 0, tf.float32)))
    assert kept < 0.2  # "keep 0.9" passed positionally drops about 90% of the units
    with pytest.raises(TypeError):
        tf.nn.dropout(tf.ones([4]), keep_prob=0.9)  # pylint: disable=unexpected-keyword-arg
    source = "import tensorflow as tf\nkeep_prob = 0.9\nh = tf.nn.dropout(tf.ones([4]), keep_prob)\n"
    assert [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP615"] == ["3"]


def test_tfp208_a_discarded_clip_changes_nothing():
    gradient = tf.constant([30.0, 40.0])
    tf.clip_by_norm(gradient, 5.0)  # the pitfall itself: the clipped copy is thrown away
    assert float(tf.norm(gradient)) == pytest.approx(50.0)
    assert float(tf.norm(tf.clip_by_norm(gradient, 5.0))) == pytest.approx(5.0)
    source = "import tensorflow as tf\n\ndef clip(grads):\n    for g in grads:\n        tf.clip_by_norm(g, 5.0)\n"
    assert [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP208"] == ["5"]


def test_tfp209_keras_refuses_to_fit_an_uncompiled_model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="compile"):
        model.fit(np.ones((2, 3)), np.ones((2, 1)), verbose=0)
    source = """
        import keras

        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.fit(x, y)
        model.compile(optimizer="adam", loss="mse")
    """
    assert _codes(source, "TFP209") == [5]


def test_tfp510_keras3_weight_names_have_no_scope_and_no_output_index():
    layer = keras.layers.Embedding(100, 8, name="embedding")
    layer.build((None,))
    [weight] = layer.weights
    assert weight.name == "embeddings" and weight.path == "embedding/embeddings"
    assert not weight.name.endswith("/embeddings:0")
    assert tf.Variable(1.0, name="raw").name == "raw:0"  # raw TF variables keep theirs: not reported
    source = """
        import keras

        layer = keras.layers.Embedding(100, 8)
        for weight in layer.weights:
            if weight.name == "embedding/embeddings:0":
                vectors = weight.numpy()
    """
    assert _codes(source, "TFP510") == [6]


def test_tfp504_keras3_backend_keeps_only_the_names_the_rule_knows():
    """Keras 3's keras.backend kept only its settings functions (K.mean, K.relu, K.resize_images
    raise AttributeError); TF 2.21's tf.keras.backend keeps Keras 2's functional backend too."""
    from tfpilot.lint.apis import KERAS3_BACKEND, TF_KERAS3_BACKEND

    assert {n for n in dir(keras.backend) if not n.startswith("_")} == set(KERAS3_BACKEND)
    assert {n for n in dir(tf.keras.backend) if not n.startswith("_")} == set(TF_KERAS3_BACKEND)
    with pytest.raises(AttributeError):
        keras.backend.relu  # noqa: B018 - the attribute lookup is the premise
    source = textwrap.dedent(
        """
        from keras import backend as K
        import tensorflow as tf


        def relu6(x):
            return K.relu(x, max_value=6)


        def loss(y, p):
            return K.mean(K.square(y - p))


        fine = K.image_data_format() + str(tf.keras.backend.mean)
        """
    )
    found = [f for f in lint_source(source, path="backend.py") if f.code == "TFP504"]
    assert [f.location.split(":")[1] for f in found] == ["7"] and "(and 2 more in this file)" in found[0].message


def test_tfp614_tf1_fallback_in_an_except_handler_is_never_reached_on_tf2():
    assert hasattr(tf.image, "resize") and not hasattr(tf.image, "resize_images")
    source = textwrap.dedent(
        """
        import tensorflow as tf


        def up(x):
            try:
                return tf.image.resize(x, (2, 2))
            except AttributeError:
                return tf.image.resize_images(x, (2, 2))
        """
    )
    assert not [f for f in lint_source(source, path="up.py") if f.code == "TFP614"]


@pytest.mark.parametrize(
    "shape",
    [
        "np.prod(dims)",
        "functools.reduce(lambda x, y: x * y, dims)",
        "functools.reduce(operator.mul, dims)",
        "len(dims)",
    ],
)
def test_tfp504_keras3_refuses_a_computed_int_as_an_input_shape(shape):
    """A product of dimensions or a count is one integer, which Keras 3 refuses as a shape, numpy's
    int64 included; as a tuple's element it is fine."""
    import functools
    import operator

    dims = (2, 3)
    with pytest.raises(ValueError, match="Cannot convert"):
        keras.Input(shape=eval(shape, {"np": np, "functools": functools, "operator": operator, "dims": dims}))
    source = f"import functools\nimport operator\n\nimport numpy as np\nfrom keras import Input\n\n\ndef build(dims):\n    flat = {shape}\n    return Input(shape=flat), Input(shape=(flat,))\n"
    found = [f for f in lint_source(source, path="shape.py") if f.code == "TFP504"]
    assert [f.location.split(":")[1:3] for f in found] == [["10", "12"]]


def test_tfp406_a_weights_name_ending_in_an_epoch_number_is_refused(tmp_path):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    epoch = 3
    with pytest.raises(ValueError, match="weights.h5"):
        model.save_weights(str(tmp_path / "ckpt") + "." + str(epoch))
    source = textwrap.dedent(
        """
        import keras


        class Saver(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                self.model.save_weights(self.path + "." + str(epoch))
                self.model.save_weights(self.path + "." + str(epoch) + ".weights.h5")
        """
    )
    found = [f for f in lint_source(source, path="saver.py") if f.code == "TFP406"]
    assert [f.location.split(":")[1] for f in found] == ["7"]


RELAXED = """\
import tensorflow as tf


@tf.function(experimental_relax_shapes=True)
def step(x):
    return x * 2
"""


@pytest.mark.parametrize(
    ("pin", "severity"),
    [
        ("tensorflow-gpu==2.7.0", "info"),
        ("tensorflow>=2.4,<2.9", "info"),
        ("tensorflow>=2.12", "warning"),
        ("", "warning"),
    ],
)
def test_tfp107_the_old_name_still_runs_and_the_rename_is_a_note_where_the_pin_predates_it(tmp_path, pin, severity):
    """TF 2.21 still takes `experimental_relax_shapes` (so the finding is a rename, not a break), and
    `reduce_retracing` arrived in TF 2.9: a project pinned below it must keep the old name."""
    from tfpilot.lint.engine import lint_paths

    namespace: dict = {}
    exec(compile(RELAXED, "<relaxed>", "exec"), {"tf": tf}, namespace)
    assert int(namespace["step"](tf.constant(2))) == 4
    (tmp_path / ".git").mkdir()
    (tmp_path / "setup.py").write_text(f"from setuptools import setup\nsetup(install_requires=['{pin}'])\n")
    (tmp_path / "train.py").write_text(RELAXED)
    report = lint_paths([tmp_path])
    ((finding,),) = [[f for f in report.findings if f.code == "TFP107"]]
    assert finding.severity.value == severity
    assert ("pins TF 2." in finding.message) == (severity == "info")


def test_tfp511_a_version_compared_as_a_string_misorders_two_digit_minor_versions():
    """'2.21.0' > '2.4.0' is False as strings: the branch meant for old TensorFlow runs on TF 2.21."""
    assert tf.__version__.split(".")[:2] == ["2", "21"] and not (tf.__version__ > "2.4.0")
    assert keras.__version__.startswith("3.1") and keras.__version__ < "3.9"
    source = textwrap.dedent(
        """
        import tensorflow as tf
        import keras

        if tf.__version__ > '2.4.0':
            pass
        if tf.__version__ >= "2.0":
            pass
        old = tf.version.VERSION < "2.9"
        modern = keras.__version__ >= "3.0"
        legacy = keras.__version__ < "3.9"
        """
    )
    lines = [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP511"]
    assert lines == ["5", "9", "11"]


def test_tfp504_keras3_refuses_a_positional_name_in_add_weight():
    class Embedding(keras.layers.Layer):
        def build(self, input_shape):
            self.table = self.add_weight("weight", shape=(4, 2))

    with pytest.raises(ValueError, match="must be passed as a keyword"):
        Embedding()(keras.ops.ones((1, 3)))
    source = textwrap.dedent(
        """
        import tensorflow as tf

        class Embedding(tf.keras.layers.Layer):
            def build(self, input_shape):
                self.table = self.add_weight("weight", shape=(4, 2))
                self.bias = self.add_weight(name="bias", shape=(2,))

        class Store:
            def add_weight(self, name, value):
                self.name = name

            def fill(self):
                self.add_weight("w", 3)
        """
    )
    lines = [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP504"]
    assert lines == ["6"]


def test_tfp512_keras3_puts_weight_decay_where_keras2_took_the_optimizers_name():
    import inspect

    from tfpilot.lint.rules.tfp512_optimizer_positional_name import NAME_POSITION

    for kind, position in NAME_POSITION.items():
        parameters = list(inspect.signature(getattr(keras.optimizers, kind).__init__).parameters)[1:]
        assert parameters[position] == "weight_decay", kind
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.01, 0.0, False, "sgd"), "mse")  # accepted when made...
    with pytest.raises(Exception, match="Cast"):  # ...and fails at the first update
        model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
    source = textwrap.dedent(
        """
        import tensorflow as tf

        class AdamWeightDecay(tf.keras.optimizers.Adam):
            def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                         name="AdamWeightDecay", **kwargs):
                super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name, **kwargs)

        plain = tf.keras.optimizers.SGD(0.1, 0.9, False, "sgd")
        decayed = tf.keras.optimizers.SGD(0.1, 0.9, False, 1e-4)
        named = tf.keras.optimizers.Adam(0.001, name="adam")
        """
    )
    lines = [f.location.split(":")[-2] for f in lint_source(source, path="p.py") if f.code == "TFP512"]
    assert lines == ["7", "9"]


def test_tfp504_keras3_refuses_checkpoint_period_and_reduction_auto():
    with pytest.raises(TypeError, match="period"):
        keras.callbacks.ModelCheckpoint("m.keras", period=5)
    keras.callbacks.ModelCheckpoint("m.keras", save_freq=5)  # the Keras 3 spelling

    class Pairwise(keras.losses.Loss):
        def call(self, y_true, y_pred):
            return y_pred

    with pytest.raises(ValueError, match="reduction"):
        Pairwise(reduction=tf.keras.losses.Reduction.AUTO)
    Pairwise(reduction=tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE)


# --- issue 30 round 10 (found on the held-out set after its figure was recorded) -------------------


def _tfp504_lines(source: str) -> list[str]:
    found = lint_source(textwrap.dedent(source), path="p.py")
    return [f.location.split(":")[-2] for f in found if f.code == "TFP504"]


def test_tfp504_keras3_optimizers_have_no_optimizer_v2_internals_and_variables_is_a_list():
    optimizer = keras.optimizers.Adam()
    for name in ("_create_hypers", "_create_slots", "_set_hyper", "_decayed_lr", "get_slot", "get_slot_names"):
        assert not hasattr(optimizer, name), name
    with pytest.raises(TypeError, match="not callable"):
        optimizer.variables()
    source = """
        import tensorflow as tf

        def setup(model):
            optimizer = tf.keras.optimizers.Adam(1e-3)
            optimizer._create_hypers()
            optimizer._create_slots(model.trainable_variables)
            count = len(optimizer.variables())
            fine = optimizer.variables
            return count, fine
        """
    # one finding per cause and file (the second internal is counted in the first's message)
    assert _tfp504_lines(source) == ["6", "8"]
    # TF1's optimizers have these methods: a file that builds one is left alone
    tf1 = source.replace("tf.keras.optimizers.Adam(1e-3)", "tf.compat.v1.train.AdamOptimizer(1e-3)")
    assert _tfp504_lines(tf1) == []


def test_tfp504_keras3_get_initial_state_takes_only_the_batch_size():
    cell = keras.layers.StackedRNNCells([keras.layers.LSTMCell(4)])
    with pytest.raises(TypeError, match="dtype"):
        cell.get_initial_state(batch_size=2, dtype=tf.float32)
    assert len(cell.get_initial_state(batch_size=2)) == 1
    source = """
        import tensorflow as tf

        class Agent(tf.keras.layers.Layer):
            def __init__(self):
                self._core = tf.keras.layers.StackedRNNCells([tf.keras.layers.LSTMCell(4)])
                self._other = make_core()

            def initial_state(self, batch_size):
                return self._core.get_initial_state(batch_size=batch_size, dtype=tf.float32)

            def fine(self, batch_size):
                return self._core.get_initial_state(batch_size=batch_size)

            def unknown(self, batch_size):
                return self._other.get_initial_state(batch_size=batch_size, dtype=tf.float32)
        """
    assert _tfp504_lines(source) == ["10"]


def test_tfp504_keras3_models_hide_a_method_named_loss_behind_an_attribute():
    class Word2Vec(keras.Model):
        def call(self, x):
            return x

        def loss(self, x, y):
            return x - y

    assert Word2Vec().loss is None
    source = """
        import tensorflow as tf
        from tensorflow import keras

        class Word2Vec(keras.Model):
            def call(self, x):
                return x

            def loss(self, x, y):
                return tf.reduce_mean(x - y)

        class Block(keras.layers.Layer):
            def loss(self, x, y):
                return x - y

        class Tracked(keras.Model):
            @property
            def compiled(self):
                return True
        """
    assert _tfp504_lines(source) == ["9"]


def test_tfp504_keras3_and_tf_module_do_not_see_each_others_variables():
    class Agent(tf.Module):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2)
            self.dense.build((None, 3))

    class Scaled(keras.Model):
        def __init__(self):
            super().__init__()
            self.scale = tf.Variable(5.0)

        def call(self, x):
            return self.scale * x

    assert len(Agent().dense.trainable_variables) == 2 and Agent().trainable_variables == ()
    assert Scaled().trainable_variables == [] and Scaled().weights == []
    source = """
        import tensorflow as tf

        class Agent(tf.Module):
            def __init__(self, num_actions):
                super().__init__(name="agent")
                self._body = tf.keras.layers.Dense(64)
                self._head = tf.keras.layers.Dense(num_actions)

        class Exporter(tf.Module):
            def __init__(self, model):
                self.model = model

        class Scaled(tf.keras.layers.Layer):
            def __init__(self):
                super().__init__()
                self.scale = tf.Variable(1.0)
                self.bias = self.add_weight(shape=(), initializer="zeros")

        class Plain(tf.Module):
            def __init__(self):
                self.scale = tf.Variable(1.0)
        """
    assert _tfp504_lines(source) == ["4", "17"]


def test_tfp504_keras3_base_classes_lack_keras2_internals_that_subclasses_read():
    from tfpilot.lint.keras3_private import KERAS3_PRIVATE, installed_private

    for base in ("callbacks.TensorBoard", "layers.Layer", "Model"):
        installed = installed_private(base)
        assert "_get_writer" not in installed and "_train_run_name" not in installed
        # the table the rule reads names what the installed Keras has (a few members every version keeps)
        assert {name for name in KERAS3_PRIVATE[base] if name in ("_tracker", "_name", "_log_dir")} <= installed
    source = """
        import tensorflow as tf

        class Board(tf.keras.callbacks.TensorBoard):
            def __init__(self, log_dir):
                super().__init__(log_dir=log_dir)
                self._steps = 0

            def on_epoch_end(self, epoch, logs=None):
                self._steps += 1
                writer = self._get_writer(self._train_run_name)
                return self._log_dir, writer, self._helper()

            def _helper(self):
                return None

        class Dynamic(tf.keras.layers.Layer):
            def __init__(self, **kwargs):
                super().__init__()
                for key, value in kwargs.items():
                    setattr(self, "_" + key, value)

            def call(self, x):
                return x * self._scale
        """
    assert _tfp504_lines(source) == ["11"]


def test_tfp211_keras_momentum_keeps_the_old_average_so_pytorchs_point_one_follows_the_last_batch():
    layer = keras.layers.BatchNormalization(momentum=0.1)
    layer(np.full((8, 2), 5.0, dtype="float32"), training=True)
    assert np.allclose(layer.moving_mean.numpy(), 4.5)  # 0.1 * 0 + 0.9 * 5: the last batch's mean, almost
    usual = keras.layers.BatchNormalization()  # Keras' default, 0.99, PyTorch's 0.1 turned around is 0.9
    usual(np.full((8, 2), 5.0, dtype="float32"), training=True)
    assert np.allclose(usual.moving_mean.numpy(), 0.05)
    source = "import keras\n\nnorm = keras.layers.BatchNormalization(momentum=0.1, epsilon=1e-5)\n"
    assert "TFP211" in [finding.code for finding in lint_source(source, path="premise.py")]
    ported = "import keras\n\nnorm = keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)\n"
    assert "TFP211" not in [finding.code for finding in lint_source(ported, path="premise.py")]
