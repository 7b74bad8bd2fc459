"""Classes of read pitfalls no rule covered before issue 30's round 7, each with a VALID case
(what the rule must leave alone) and an INVALID one (what it must report). The Keras 3 behaviour
each claims is run in test_lint_tf_premises.py. Written for tfpilot; no outside code is copied."""

from __future__ import annotations

import textwrap

from tfpilot.findings import Severity
from tfpilot.lint.earned import rule_severity
from tfpilot.lint.engine import lint_source


def _findings(source: str, code: str, path: str = "case.py") -> list[tuple[int, Severity]]:
    found = lint_source(textwrap.dedent(source), path=path)
    return [(int(f.location.split(":")[-2]), rule_severity(f)) for f in found if f.code == code]


# --- TFP504: Keras 2 spellings Keras 3 refuses -------------------------------------------------

_SHAPES = """
    import keras

    LATENT = 64

    class Generator:
        def __init__(self):
            self.z_dim = SIZE

        def build(self):
            z = keras.Input(shape=self.z_dim)
            label = keras.Input(shape=(1), dtype="int32")
            return keras.Model([z, label], keras.layers.Dense(4)(z))
"""


def test_tuple_input_shapes_are_left_alone():
    # VALID: a tuple, and a name that holds one
    source = _SHAPES.replace("SIZE", "(LATENT,)").replace("shape=(1)", "shape=(1,)")
    assert _findings(source, "TFP504") == []


def test_int_input_shapes_are_reported_through_attributes():
    # INVALID: `self.z_dim` holds an int; `(1)` is the int 1
    assert _findings(_SHAPES.replace("SIZE", "LATENT"), "TFP504") == [(11, Severity.ERROR), (12, Severity.ERROR)]


_INIT = """
    import keras

    class Gain(keras.layers.Layer):
        def __init__(self, gain=2.0, **kwargs):
            super().__init__(ARGS)
            self.gain = gain

    class Pair(keras.Model):
        def __init__(self, inputs, outputs):
            super().__init__(inputs, outputs)
"""


def test_keyword_layer_init_and_a_functional_model_subclass_are_left_alone():
    # VALID: kwargs passed as keywords; a Model subclass passing inputs and outputs positionally
    assert _findings(_INIT.replace("ARGS", "**kwargs"), "TFP504") == []


def test_positional_kwargs_to_a_layer_init_are_reported():
    # INVALID: the dict itself is passed positionally; Keras 3's Layer.__init__ is keyword-only
    assert _findings(_INIT.replace("ARGS", "kwargs"), "TFP504") == [(6, Severity.ERROR)]


_LR = """
    import keras

    optimizer = keras.optimizers.SGD(0.1)
    for epoch in range(10):
        if epoch == 5:
            optimizer.ATTR.assign(0.01)
        print(optimizer.ATTR)
"""


def test_optimizer_learning_rate_is_left_alone():
    # VALID: Keras 3's name; and `args.lr` of a command line is no optimizer
    source = (
        _LR.replace("ATTR", "learning_rate") + "\nimport argparse\nargs = argparse.Namespace(lr=0.1)\nprint(args.lr)\n"
    )
    assert _findings(source, "TFP504") == []


def test_optimizer_lr_is_reported_once_per_file():
    # INVALID: one finding at the first use, the message counts the rest
    found = [f for f in lint_source(textwrap.dedent(_LR.replace("ATTR", "lr")), path="case.py") if f.code == "TFP504"]
    assert [(int(f.location.split(":")[-2]), rule_severity(f)) for f in found] == [(7, Severity.ERROR)]
    assert "(and 1 more in this file)" in found[0].message


# --- TFP308: a take/skip split of a dataset that reshuffles ------------------------------------

_SPLIT = """
    import tensorflow as tf

    def splits(features, labels, test_size):
        ds = tf.data.Dataset.from_tensor_slices((features, labels))
        ds = ds.shuffle(10000SHUFFLE)
        test = ds.take(test_size).batch(32)
        train = ds.skip(test_size).shuffle(1000).batch(32)
        return train, test
"""


def test_split_of_a_dataset_shuffled_once_is_left_alone():
    # VALID: reshuffle_each_iteration=False fixes the order, so take and skip partition it
    assert _findings(_SPLIT.replace("SHUFFLE", ", reshuffle_each_iteration=False"), "TFP308") == []


def test_split_of_a_reshuffling_dataset_is_reported_at_the_shuffle():
    # INVALID: a seed does not stop the reshuffle; reported (as a note) at the shuffle
    assert _findings(_SPLIT.replace("SHUFFLE", ", seed=1"), "TFP308") == [(6, Severity.INFO)]


# --- TFP509: Keras 2-only libraries --------------------------------------------------------------

_LIBRARY = """
    import tensorflow as tf
    IMPORT

    def make_norm():
        return NORM
"""


def test_keras3_normalization_and_an_optional_addons_import_are_left_alone():
    # VALID: Keras 3's own layer; tensorflow_addons only where ImportError is caught
    keras3 = _LIBRARY.replace("IMPORT", "import keras").replace("NORM", "keras.layers.GroupNormalization(groups=-1)")
    optional = _LIBRARY.replace(
        "IMPORT", "try:\n        import tensorflow_addons as tfa\n    except ImportError:\n        tfa = None"
    )
    assert _findings(keras3, "TFP509") == []
    assert _findings(optional.replace("NORM", "tfa"), "TFP509") == []


def test_addons_and_the_private_keras_copy_are_reported_once_per_file_and_library():
    # INVALID: each library at its first import; a second import of the same one is the same cause
    source = _LIBRARY.replace(
        "IMPORT",
        "import tensorflow_addons as tfa\n    from tensorflow_addons.layers import InstanceNormalization\n"
        "    from tensorflow.python.keras.layers import Conv2D",
    ).replace("NORM", "InstanceNormalization()")
    assert _findings(source, "TFP509") == [(3, Severity.ERROR), (5, Severity.ERROR)]
    # a file that runs on Keras 2 (tf_keras) gets a note: the libraries still import there
    assert _findings("import tf_keras\n" + textwrap.dedent(source), "TFP509") == [
        (4, Severity.INFO),
        (6, Severity.INFO),
    ]


# --- TFP207: model.predict() once per step ------------------------------------------------------

_AGENT = """
    import keras
    import numpy as np
    CLASSIFIER

    class Agent:
        def __init__(self):
            self.q_net = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])

        def act(self, state):
            return int(np.argmax(self.q_net.predict(state[None])))

    def run(agent, env, steps):
        state = env.reset()
        for _ in range(steps):
            state = env.step(agent.act(state))
"""


def test_predict_outside_per_step_code_is_left_alone():
    # VALID: each model of an ensemble once, a one-batch preview loop, a scikit-learn estimator
    source = """
    import keras
    from sklearn.linear_model import LogisticRegression

    def evaluate(ensemble, x, preview):
        scores = [member.predict(x) for member in ensemble]
        for member in ensemble:
            scores.append(member.predict(x))
        for images, labels in preview.take(1):
            first = ensemble[0].predict(images)
        clf = LogisticRegression()
        for fold in range(10):
            clf.predict(x)
        return scores, first
    """
    assert _findings(source, "TFP207") == []


def test_predict_in_a_method_the_step_loop_calls_is_reported():
    # INVALID: `act` runs once per environment step; predict on one state each time
    assert _findings(_AGENT.replace("CLASSIFIER", ""), "TFP207") == [(11, Severity.INFO)]


# --- TFP508: unfrozen again after the combined model's compile ------------------------------------

_COMBINED = """
    import keras

    def build(generator, critic, noise):
        critic.trainable = False
        combined = keras.Model(noise, critic(generator(noise)))
        combined.compile(loss="mse", optimizer="adam")
        BETWEEN
        critic.trainable = True
        return combined

    def step(combined, z, y):
        return combined.train_on_batch(z, y)
"""


def test_unfreezing_after_the_combined_model_has_trained_is_left_alone():
    # VALID: fine-tuning: the combined model trained while frozen, then the base is unfrozen
    assert _findings(_COMBINED.replace("BETWEEN", "combined.fit(z, y)"), "TFP508") == []


def test_unfreezing_before_the_combined_model_first_trains_is_reported():
    # INVALID: Keras 3 reads `trainable` at the combined model's first train_on_batch
    assert _findings(_COMBINED.replace("BETWEEN", ""), "TFP508") == [(9, Severity.WARNING)]


# --- TFP615: TF1's keep_prob given to TF2's tf.nn.dropout ----------------------------------------

_DROPOUT = """
    import tensorflow as tf

    class Tower(tf.Module):
        def __init__(self, keep_prob=0.8):
            self.keep_prob = keep_prob

        def __call__(self, h):
            return tf.nn.dropout(h, ARGUMENT)
"""


def test_dropout_given_a_rate_is_left_alone():
    # VALID: the rate derived from the keep probability
    assert _findings(_DROPOUT.replace("ARGUMENT", "rate=1 - self.keep_prob"), "TFP615") == []


def test_dropout_given_a_keep_probability_is_reported():
    # INVALID: positionally it is the rate (a note); as a keyword TF2 has no keep_prob at all (TypeError: an
    # error since round 19, whose held-out code had three)
    assert _findings(_DROPOUT.replace("ARGUMENT", "self.keep_prob"), "TFP615") == [(9, Severity.INFO)]
    assert _findings(_DROPOUT.replace("ARGUMENT", "keep_prob=self.keep_prob"), "TFP615") == [(9, Severity.ERROR)]
    # TF1's keep probability computed from a drop rate (BERT's `1.0 - dropout_prob`) drops that much on TF2
    assert _findings(_DROPOUT.replace("ARGUMENT", "1.0 - self.dropout_prob"), "TFP615") == [(9, Severity.INFO)]
    assert _findings(_DROPOUT.replace("ARGUMENT", "1 - self.keep_prob"), "TFP615") == []


# --- TFP208: a pure op's result thrown away ------------------------------------------------------

_CLIP = """
    import tensorflow as tf

    def step(model, optimizer, loss_fn, x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        CLIP
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


def test_clipped_gradients_that_are_used_are_left_alone():
    # VALID: the clipped list replaces the gradients; a bare op at a notebook's top level displays
    assert _findings(_CLIP.replace("CLIP", "grads, _ = tf.clip_by_global_norm(grads, 1.0)"), "TFP208") == []
    assert _findings("import tensorflow as tf\ntf.reshape(tf.range(6), (2, 3))\n", "TFP208") == []


def test_clipping_whose_result_is_dropped_is_reported():
    # INVALID: the op's result is the only thing it produces
    assert _findings(_CLIP.replace("CLIP", "tf.clip_by_global_norm(grads, 1.0)"), "TFP208") == [(8, Severity.WARNING)]


# --- TFP209: trained before compiled ------------------------------------------------------------

_ORDER = """
    import keras

    def train(x, y, compiled_elsewhere):
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
        FIRST
        SECOND
        compiled_elsewhere.fit(x, y)
        return model
"""


def test_compile_then_fit_and_a_model_from_elsewhere_are_left_alone():
    # VALID: the right order; a parameter's model is compiled by its caller
    source = _ORDER.replace("FIRST", 'model.compile(optimizer="adam", loss="mse")').replace("SECOND", "model.fit(x, y)")
    assert _findings(source, "TFP209") == []


def test_fit_before_the_compile_of_the_same_scope_is_reported():
    # INVALID: statements in the wrong order
    source = _ORDER.replace("FIRST", "model.fit(x, y)").replace("SECOND", 'model.compile(optimizer="adam", loss="mse")')
    assert _findings(source, "TFP209") == [(6, Severity.ERROR)]


# --- TFP403: a save path from a command-line flag's default ---------------------------------------

_FLAG_SAVE = """
    import keras
    from absl import flags

    flags.DEFINE_string("output", DEFAULT, "where the model goes")
    FLAGS = flags.FLAGS

    def export():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        model.save(FLAGS.output)
"""


def test_model_save_to_a_keras_flag_default_is_left_alone():
    # VALID: the default names a .keras file
    assert _findings(_FLAG_SAVE.replace("DEFAULT", '"./out/detector.keras"'), "TFP403") == []


def test_model_save_to_a_flag_default_without_suffix_is_reported():
    # INVALID: Keras 3's save() refuses a name without .keras / .h5
    assert _findings(_FLAG_SAVE.replace("DEFAULT", '"./checkpoints/detector-416"'), "TFP403") == [(10, Severity.ERROR)]


# --- TFP510: Keras 2 weight names ----------------------------------------------------------------

_NAMES = """
    import keras
    import tensorflow as tf

    def embedding_matrix(model, step):
        counter = tf.Variable(step, name="step")
        if counter.name == "step:0":
            print("a raw TF variable keeps its output index")
        return [w.numpy() for w in model.layers[0].weights if TEST]
"""


def test_path_tests_and_raw_tf_variables_are_left_alone():
    # VALID: Keras 3's scoped name is .path; a raw tf.Variable's name still ends in :0
    assert _findings(_NAMES.replace("TEST", 'w.path == "embedding/embeddings"'), "TFP510") == []


def test_keras2_scoped_names_on_keras_weights_are_reported():
    # INVALID: never true for a Keras 3 weight
    assert _findings(_NAMES.replace("TEST", 'w.name == "embedding/embeddings:0"'), "TFP510") == [(9, Severity.WARNING)]
