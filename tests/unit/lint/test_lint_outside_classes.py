"""The classes of wrong and missed findings that outside code bases showed (issue 30), each with
a VALID case (what the rule must leave alone, or keep a note) and an INVALID one (what it must
report, where). Written for tfpilot; no outside code is copied here."""

from __future__ import annotations

import textwrap

from tfpilot.findings import Severity
from tfpilot.lint.earned import rule_severity
from tfpilot.lint.engine import lint_source


def _findings(source: str, code: str) -> list[tuple[int, int, Severity, str]]:
    found = lint_source(textwrap.dedent(source), path="case.py")
    return [
        (int(f.location.split(":")[-2]), int(f.location.split(":")[-1]), rule_severity(f), f.message)
        for f in found
        if f.code == code
    ]


def test_map_on_something_that_is_not_tf_data_is_never_a_tf_data_finding():
    source = """
        import tensorflow as tf
        from datasets import load_dataset

        dataset = load_dataset("imdb")
        dataset = dataset.map(lambda row: tokenizer(row["text"]))
        lengths = list(map(len, texts))
        frame["label"] = frame["label"].map({"neg": 0, "pos": 1})
    """
    assert _findings(source, "TFP301") == []


def test_stateless_map_is_left_to_tensorflow_and_a_stateful_one_is_reported():
    valid = """
        import tensorflow as tf

        def parse(record):
            features = tf.io.parse_single_example(record, {"x": tf.io.FixedLenFeature([], tf.float32)})
            return features["x"] * 2.0

        ds = tf.data.TFRecordDataset(["a.tfrecord"]).map(parse).batch(32)
    """
    assert _findings(valid, "TFP301") == []
    invalid = """
        import tensorflow as tf

        def augment(image, label):
            return tf.image.random_brightness(image, 0.2), label

        ds = tf.data.Dataset.from_tensor_slices((images, labels)).map(augment).batch(32)
    """
    [(line, _column, severity, message)] = _findings(invalid, "TFP301")
    assert line == 7 and severity is Severity.WARNING and "tf.image.random_brightness, line 5" in message


def test_tf_keras_required_by_a_keras2_library_is_a_note_and_one_finding_per_file():
    valid = """
        import os
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        import tf_keras
        from tf_agents.networks import q_network
    """
    [(line, _column, severity, message)] = _findings(valid, "TFP503")
    assert (line, severity) == (3, Severity.INFO) and "tf_agents" in message
    invalid = """
        import os
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        import tf_keras as keras
    """
    assert [(line, severity) for line, _c, severity, _m in _findings(invalid, "TFP503")] == [(3, Severity.WARNING)]


def test_model_call_without_training_lambdas_and_training_independent_factories():
    valid = """
        import keras
        import tensorflow as tf

        def build():
            inputs = keras.Input((4,))
            return keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Dense(8)(inputs)))

        model = build()
        linear_model = lambda x: 2.0 * x + 1.0

        def step(x):
            with tf.GradientTape() as tape:
                a = model(x)
                b = linear_model(x)
            return a, b
    """
    found = _findings(valid, "TFP201")
    assert [(line, severity) for line, _c, severity, _m in found] == [(14, Severity.INFO)]
    invalid = """
        import keras
        import tensorflow as tf

        def build():
            return keras.Sequential([keras.layers.Dense(8), keras.layers.BatchNormalization(), keras.layers.Dense(1)])

        model = build()

        def step(x):
            with tf.GradientTape() as tape:
                a = model(x)
            return a
    """
    assert [(line, severity) for line, _c, severity, _m in _findings(invalid, "TFP201")] == [(12, Severity.WARNING)]


def test_forward_pass_one_call_away_from_the_tape_is_reported_in_the_helper():
    invalid = """
        import keras
        import tensorflow as tf

        model = keras.Sequential([keras.layers.Dense(8), keras.layers.Dropout(0.2), keras.layers.Dense(3)])

        def loss(model, x, y):
            y_ = model(x)
            return keras.losses.mse(y, y_)

        def grad(model, inputs, targets):
            with tf.GradientTape() as tape:
                loss_value = loss(model, inputs, targets)
            return tape.gradient(loss_value, model.trainable_variables)
    """
    [(line, _column, severity, message)] = _findings(invalid, "TFP201")
    assert line == 8 and severity is Severity.WARNING and "line 13 (through loss())" in message
    valid = invalid.replace(
        "def loss(model, x, y):\n            y_ = model(x)",
        "def loss(model, x, y):\n            y_ = model(x, training=True)",
    )
    assert _findings(valid, "TFP201") == []
    positional = invalid.replace(
        "def loss(model, x, y):\n            y_ = model(x)",
        "def loss(model, x, y, is_training=True):\n            y_ = model(x, is_training)",
    )
    assert _findings(positional, "TFP201") == []


def test_seed_finding_once_per_file():
    source = """
        import keras
        import tensorflow as tf

        tf.random.set_seed(1)
        model = keras.Sequential([keras.layers.Dense(1)])
        tf.random.set_seed(2)
        other = keras.Sequential([keras.layers.Dropout(0.5)])
        tf.random.set_seed(3)
        ds = tf.data.Dataset.range(10).shuffle(10)
    """
    # one finding for the file; the last seed only feeds a tf.data shuffle, which it does seed
    [(line, _column, _severity, message)] = _findings(source, "TFP506")
    assert line == 5 and "1 more" in message
    tf_only = "import keras\nimport tensorflow as tf\ntf.random.set_seed(3)\nds = tf.data.Dataset.range(9).shuffle(9)\n"
    assert _findings(tf_only, "TFP506") == []
    assert _findings(source.replace("tf.random.set_seed(1)", "keras.utils.set_random_seed(1)"), "TFP506") == []


def test_a_call_in_a_chain_is_located_at_its_method_not_the_statement():
    source = """
        import tensorflow as tf

        ds = (
            tf.data.Dataset.range(100)
            .shuffle(100)
            .repeat()
            .cache()
        )
    """
    [(line, column, _severity, message)] = _findings(source, "TFP307")
    assert (line, column) == (8, 6) and "grows without bound" in message
    single = "import tensorflow as tf\nds = tf.data.Dataset.range(9).cache().shuffle(9).repeat()\n"
    assert _findings(single, "TFP307") == []


def test_checkpoint_paths_through_variables_and_model_checkpoint():
    invalid = """
        import keras

        checkpoint_path = "training_1/cp.ckpt"
        callback = keras.callbacks.ModelCheckpoint(filepath=checkpoint_path, save_weights_only=True)
    """
    [(line, _column, severity, _message)] = _findings(invalid, "TFP406")
    assert (line, severity) == (5, Severity.ERROR)
    valid = invalid.replace("cp.ckpt", "cp.weights.h5")
    assert _findings(valid, "TFP406") == []
    # a name the file computes in a loop is not judged
    unknown = """
        import keras

        for checkpoint_path in paths:
            model.save_weights(checkpoint_path)
    """
    assert _findings(unknown, "TFP406") == []


def test_python_callback_inside_a_map_lambda_whatever_the_receiver_is_called():
    invalid = """
        import tensorflow as tf

        def make(train):
            return train.map(lambda x, y: (tf.py_function(load, [x], tf.float32), y))
    """
    assert [line for line, *_ in _findings(invalid, "TFP305")] == [5]
    valid = """
        import tensorflow as tf

        def make(train):
            return train.map(lambda x, y: (tf.io.decode_png(tf.io.read_file(x)), y))
    """
    assert _findings(valid, "TFP305") == []


def test_hdf5_lambda_finding_follows_the_saved_model_not_the_file():
    source = """
        import keras

        model = keras.Sequential([keras.layers.Dense(1)])
        model.save("plain.h5")

        def build():
            inputs = keras.Input((2,))
            return keras.Model(inputs, keras.layers.Lambda(lambda t: t * 2.0)(inputs))

        lambda_model = build()
        lambda_model.save("with_lambda.h5")
    """
    assert [line for line, *_ in _findings(source, "TFP401")] == [12]


def test_persistent_tape_for_second_derivatives_and_test_reference_gradients():
    second = """
        import tensorflow as tf

        x = tf.Variable(1.0)
        with tf.GradientTape(persistent=True) as tape:
            y = tf.sin(x)
            dy, dz = tape.gradient(y, [x, x])
        d2y = tape.gradient(dy, x)
    """
    assert _findings(second, "TFP205") == []
    wasteful = second.replace("d2y = tape.gradient(dy, x)", "print(dy, dz)")
    assert [line for line, *_ in _findings(wasteful, "TFP205")] == [7]


def test_model_class_from_another_file_of_the_project(tmp_path):
    network = """
        import keras

        class VGG(keras.Model):
            def __init__(self):
                super().__init__()
                self.body = [keras.layers.Conv2D(8, 3), keras.layers.BatchNormalization(), keras.layers.Dense(10)]

            def call(self, x):
                for layer in self.body:
                    x = layer(x)
                return x

        class Linear(keras.layers.Layer):
            def call(self, x):
                return x * 2.0

        class Plain(tf.Module):
            def __call__(self, x):
                return x
    """
    (tmp_path / "network.py").write_text(
        textwrap.dedent(network).replace("import keras", "import keras\nimport tensorflow as tf")
    )
    train = """
        import tensorflow as tf
        from network import VGG, Linear, Plain

        model = VGG()
        linear_model = Linear()
        plain_model = Plain()

        def step(x):
            with tf.GradientTape() as tape:
                a = model(x)
                b = linear_model(x)
                c = plain_model(x)
            return a, b, c
    """
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(train))
    found = [
        (int(f.location.split(":")[-2]), rule_severity(f))
        for f in lint_source(path.read_text(), path=str(path))
        if f.code == "TFP201"
    ]
    assert found == [(11, Severity.WARNING), (12, Severity.INFO)]


def test_a_metric_a_helper_builds_on_every_call_accumulates_nothing():
    source = """
        import tensorflow as tf

        def accuracy(labels, probs):
            acc = tf.keras.metrics.SparseCategoricalAccuracy()
            acc.update_state(labels, probs)
            return acc.result()

        def select(all_logits, labels, rounds):
            for _ in range(rounds):
                for logits in all_logits:
                    score = accuracy(labels, logits)
    """
    assert _findings(source, "TFP202") == []


def test_cache_and_shuffle_under_different_conditions_is_a_note():
    source = """
        import tensorflow as tf

        def build(files, training):
            ds = tf.data.TFRecordDataset(files)
            if training:
                ds = ds.shuffle(1000)
                ds = ds.repeat()
            if not training:
                ds = ds.cache()
            return ds
    """
    [(line, _column, severity, _message)] = _findings(source, "TFP307")
    assert (line, severity) == (10, Severity.INFO)
    together = source.replace(
        "            if not training:\n                ds = ds.cache()", "            ds = ds.cache()"
    )
    assert [severity for _l, _c, severity, _m in _findings(together, "TFP307")] == [Severity.WARNING]


def test_choosing_a_keras_on_purpose_is_not_mixing_namespaces():
    source = """
        import tensorflow as tf

        version_fn = getattr(tf.keras, "version", None)
        if version_fn and version_fn().startswith("3."):
            import tf_keras as keras
        else:
            keras = tf.keras
        try:
            import keras as standalone
        except ImportError:
            standalone = None
    """
    assert _findings(source, "TFP502") == []


def test_checkpoint_names_built_by_format_and_tf_compat_v2_imports():
    source = """
        import os
        import tensorflow.compat.v2 as tf

        model.save_weights(os.path.join(trial_dir, "model.ckpt-{}".format(steps)))
        model.save_weights(f"{trial_dir}/model.ckpt-{steps}")
        model.save_weights("{}/weights".format(trial_dir) + ".weights.h5")
        files = tf.data.Dataset.list_files("shards/*")
        records = files.interleave(tf.data.TFRecordDataset, cycle_length=4)
    """
    assert [line for line, *_ in _findings(source, "TFP406")] == [5, 6]
    assert [line for line, *_ in _findings(source, "TFP301")] == [9]


def test_seed_before_a_model_from_another_modules_factory():
    source = """
        import keras
        import tensorflow as tf
        import uncertainty_baselines as ub

        tf.random.set_seed(7)
        model = ub.models.wide_resnet(input_shape=(32, 32, 3), depth=28)
        optimizer = tf.keras.optimizers.SGD(0.1)
    """
    assert [line for line, *_ in _findings(source, "TFP506")] == [6]
    flax = source.replace("import uncertainty_baselines as ub", "import flax\nimport uncertainty_baselines as ub")
    assert _findings(flax, "TFP506") == []


def test_a_python_callback_map_is_one_claim_tfp305s_and_tfp301_a_note():
    source = """
        import tensorflow as tf

        ds = tf.data.Dataset.range(4).map(lambda x: tf.py_function(slow, [x], tf.int64))
        noisy = tf.data.Dataset.range(4).map(lambda x: x + tf.random.uniform([], 0, 5, tf.int64))
    """
    # INVALID for a warning: the py_function map (TFP305 warns; num_parallel_calls buys little under the GIL).
    assert [(line, severity) for line, _, severity, _ in _findings(source, "TFP301")] == [
        (4, Severity.INFO),
        (5, Severity.WARNING),  # VALID: a random op keeps the map sequential, and parallel calls do help
    ]
    assert [(line, severity) for line, _, severity, _ in _findings(source, "TFP305")] == [(4, Severity.WARNING)]


def test_names_rebound_by_tuple_unpacking_start_a_new_pipeline():
    source = """
        import tensorflow_datasets as tfds

        ds_train, ds_info = tfds.load("fashion_mnist", split="train", with_info=True)
        ds_train = ds_train.cache().shuffle(1000).batch(32).repeat()

        ds_train, ds_info = tfds.load("mnist", split="train", with_info=True)
        ds_train = ds_train.cache()
        ds_train = ds_train.shuffle(1000)

        other, info = tfds.load("mnist", split="train", with_info=True)
        other = other.shuffle(100).cache()
    """
    # VALID: lines 8-9 build a new dataset; the first one's repeat and batch are not theirs.
    for code in ("TFP303", "TFP306"):
        assert _findings(source, code) == []
    # INVALID: the unpacked dataset is known as one, so its own cache after shuffle is reported.
    assert [line for line, *_ in _findings(source, "TFP307")] == [12]


def test_what_a_tape_differentiates_and_calls_is_the_model_whatever_its_name():
    invalid = """
        import tensorflow as tf

        class GAN:
            def __init__(self, generator, discriminator):
                self.G = generator
                self.D = discriminator

            def train_step(self, z, real):
                with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
                    fake = self.G(z)
                    score = self.D(fake)
                    extra = self.scale(fake)
                g_grads = g_tape.gradient(score, self.G.trainable_variables)
                d_grads = d_tape.gradient(score, self.D.trainable_variables)
                return g_grads, d_grads, extra
    """
    # `self.G` and `self.D` are differentiated by the step's tapes: models, whatever they are called.
    assert [line for line, *_ in _findings(invalid, "TFP201")] == [11, 12]
    valid = """
        import tensorflow as tf

        layer = tf.keras.layers.Dense(2)
        with tf.GradientTape() as tape:
            y = layer(tf.ones([1, 3]))
        grads = tape.gradient(y, layer.trainable_variables)
    """
    # A layer built here is judged by what it is (a Dense layer has no training behaviour), not by being differentiated.
    assert all(severity == Severity.INFO for _, _, severity, _ in _findings(valid, "TFP201"))


def test_a_random_draw_of_python_or_numpy_inside_a_traced_function():
    invalid = """
        import random
        import tensorflow as tf

        @tf.function
        def jitter(image, transforms):
            random.shuffle(transforms)
            return image
    """
    assert [(line, severity) for line, _, severity, _ in _findings(invalid, "TFP101")] == [(7, Severity.WARNING)]
    valid = """
        import random
        import numpy as np
        import tensorflow as tf

        @tf.function
        def folded(x):
            a = tf.constant(np.random.randn(4, 4), dtype=tf.float32)
            return x @ a

        def make_batch():
            random.shuffle(items)
            return np.random.rand(3)
    """
    # A draw that builds a constant is a note; outside a traced function nothing is said.
    assert [(line, severity) for line, _, severity, _ in _findings(valid, "TFP101")] == [(8, Severity.INFO)]


def test_the_model_pairs_of_image_to_image_gans_are_models():
    invalid = """
        import tensorflow as tf

        cyclegan.generator_AB.save("./models/cyclegan_AB")
        cyclegan.discriminator_B.save("./models/d_B")
    """
    assert [line for line, *_ in _findings(invalid, "TFP403")] == [4, 5]
    valid = """
        import tensorflow as tf

        cyclegan.generator_AB.save("./models/cyclegan_AB.keras")
        generator_settings.save("./models/settings")
        report.generator_version.save("./out")
    """
    # A .keras path is right; a name that only starts with a model word is not a model.
    assert _findings(valid, "TFP403") == []
