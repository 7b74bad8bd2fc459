"""Classes found by issue 30's held-out round 13 (after its figure was recorded), each with a VALID case (what the
rule must leave alone) and an INVALID one (what it must still report), and premise tests that run the behaviour on
the installed TensorFlow / Keras. Written for tfpilot; no outside code is copied."""

from __future__ import annotations

import functools
import textwrap

import keras
import pytest
import tensorflow as tf

from tfpilot.findings import Severity
from tfpilot.lint.engine import lint_source


def _found(source: str, code: str) -> list[tuple[int, Severity, str]]:
    return [
        (int(f.location.split(":")[-2]), f.severity, f.message)
        for f in lint_source(textwrap.dedent(source), path="c.py")
        if f.code == code
    ]


# --- TFP504: a TensorFlow op on the output of a layer made by functools.partial or by the file's own Layer class --

_PARTIAL_LAYERS = """
    import functools
    import tensorflow as tf
    from tensorflow.keras.layers import Conv2D, Input


    class Block(tf.keras.layers.Layer):
        def call(self, x):
            return x * 2.0


    def generator(size):
        conv = functools.partial(Conv2D, kernel_size=3, padding="same")
        inputs = Input([size, size, 3])
        features = Block()(conv(filters=8)(inputs))
        upsampled = tf.image.resize(features, [size * 2, size * 2], method="nearest")
        return tf.keras.Model(inputs, upsampled)
"""

_PARTIAL_LAYERS_IN_CALL = """
    import functools
    import tensorflow as tf
    from tensorflow.keras.layers import Conv2D


    class Upsampler(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.conv = functools.partial(Conv2D, kernel_size=3, padding="same")(filters=8)

        def call(self, x):
            features = self.conv(x)
            return tf.image.resize(features, [16, 16], method="nearest")
"""


def test_a_tensorflow_op_on_a_partial_layers_output_while_building_a_functional_model_is_reported():
    found = _found(_PARTIAL_LAYERS, "TFP504")
    assert [(line, severity) for line, severity, _ in found] == [(16, Severity.ERROR)]
    assert "tf.image.resize" in found[0][2]


def test_the_same_op_inside_a_layers_call_is_left_alone():
    assert _found(_PARTIAL_LAYERS_IN_CALL, "TFP504") == []


def test_premise_keras3_refuses_a_tensorflow_op_on_a_partial_layers_output():
    conv = functools.partial(keras.layers.Conv2D, kernel_size=3, padding="same")
    features = conv(filters=4)(keras.Input([8, 8, 3]))
    with pytest.raises(ValueError, match="KerasTensor cannot be used as input to a TensorFlow function"):
        tf.image.resize(features, [16, 16])


# --- TFP504: Keras 2 keywords Keras 3 refuses ----------------------------------------------------------------------

_KERAS2_KEYWORDS = """
    import tensorflow as tf
    from tensorflow.keras.callbacks import TensorBoard

    embed = tf.keras.layers.Embedding(100, 8, batch_input_shape=[4, 10])
    board = TensorBoard(log_dir="logs", write_grads=True)
    norm = tf.keras.layers.BatchNormalization(fused=True)
    rnn = tf.keras.layers.LSTM(16, time_major=False)
    saver = tf.keras.callbacks.ModelCheckpoint("best.keras", options=None)
"""

_KERAS3_KEYWORDS = """
    import tensorflow as tf
    from mytools import TensorBoard

    dense = tf.keras.layers.Dense(3, input_shape=(4,))
    board = tf.keras.callbacks.TensorBoard(log_dir="logs", embeddings_metadata=None)
    mine = TensorBoard(batch_size=32)
    inputs = tf.keras.Input(batch_shape=(4, 10))
"""


def test_keras2_keywords_keras3_refuses_are_reported_one_per_call():
    found = _found(_KERAS2_KEYWORDS, "TFP504")
    assert [line for line, _, _ in found] == [5, 6, 7, 8, 9]
    assert "ValueError" in found[0][2] and "TypeError" in found[1][2]


def test_keywords_keras3_still_takes_and_other_libraries_callbacks_are_left_alone():
    assert _found(_KERAS3_KEYWORDS, "TFP504") == []


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: keras.layers.Embedding(100, 8, batch_input_shape=[4, 10]), ValueError),
        (lambda: keras.layers.Dense(3, batch_input_shape=(None, 4)), ValueError),
        (lambda: keras.callbacks.TensorBoard(log_dir="logs", write_grads=True), TypeError),
        (lambda: keras.callbacks.TensorBoard(log_dir="logs", batch_size=32), TypeError),
        (lambda: keras.callbacks.TensorBoard(log_dir="logs", embeddings_layer_names=["a"]), TypeError),
        (lambda: keras.callbacks.TensorBoard(log_dir="logs", embeddings_data=None), TypeError),
        (lambda: keras.layers.BatchNormalization(fused=True), ValueError),
        (lambda: keras.layers.LSTM(16, time_major=False), ValueError),
        (lambda: keras.layers.GRU(16, time_major=True), ValueError),
        (lambda: keras.callbacks.ModelCheckpoint("best.keras", options=None), TypeError),
    ],
)
def test_premise_keras3_refuses_each_keras2_keyword(make, error):
    with pytest.raises(error):
        make()


def test_premise_keras3_takes_the_keywords_left_alone():
    keras.layers.Dense(3, input_shape=(4,))
    keras.callbacks.TensorBoard(log_dir="logs", embeddings_metadata=None)


# --- TFP509: Keras 2 model zoos -------------------------------------------------------------------------------------


def test_a_keras2_model_zoo_import_is_reported_unless_optional():
    assert [line for line, _, _ in _found("import keras_resnet.models\n", "TFP509")] == [1]
    assert [line for line, _, _ in _found("from keras_vggface.vggface import VGGFace\n", "TFP509")] == [1]
    optional = """
        try:
            import keras_resnet
        except ImportError:
            keras_resnet = None
    """
    assert _found(optional, "TFP509") == []
    assert _found("import classification_models\n", "TFP509") == []  # runs on Keras 3 (checked by hand)


# --- TFP207: a class of the file with its own predict() ------------------------------------------------------------

_OWN_PREDICT = """
    import numpy as np
    import tensorflow as tf


    class Scorer(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(1)

        def call(self, x):
            return self.dense(x)

        def predict(self, x):
            return tf.sigmoid(self.call(x))


    scorer = Scorer()
    faces = [np.zeros((1, 4), "float32") for _ in range(100)]
    scores = [scorer.predict(face) for face in faces]
"""


def test_a_models_own_predict_method_in_a_loop_is_not_keras_predict():
    assert _found(_OWN_PREDICT, "TFP207") == []


def test_keras_predict_in_the_same_loop_is_still_reported():
    keras_predict = _OWN_PREDICT.replace(
        "        def predict(self, x):\n            return tf.sigmoid(self.call(x))\n", ""
    )
    assert [line for line, _, _ in _found(keras_predict, "TFP207")] == [18]


# --- TFP201: layers named through local aliases (`BatchNormalization = tf.keras.layers.BatchNormalization`) ----------

_ALIASED_LAYERS = """
    import functools
    import tensorflow as tf


    def make_classifier():
        Conv2D = functools.partial(tf.keras.layers.Conv2D, padding="same", activation="relu")
        BatchNormalization = tf.keras.layers.BatchNormalization
        return tf.keras.Sequential([
            Conv2D(filters=8, kernel_size=5, strides=2),
            BatchNormalization(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(1),
        ])


    classifier = make_classifier()
    optimizer = tf.keras.optimizers.Adam()


    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = classifier(x)
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, classifier.trainable_variables)
        optimizer.apply_gradients(zip(grads, classifier.trainable_variables))
"""


def test_an_aliased_batchnorm_is_seen_so_the_finding_is_not_called_harmless():
    found = _found(_ALIASED_LAYERS, "TFP201")
    assert len(found) == 1
    assert "ignore training=" not in found[0][2]


def test_aliased_layers_that_ignore_training_still_make_the_finding_a_note():
    invariant = _ALIASED_LAYERS.replace("            BatchNormalization(),\n", "")
    found = _found(invariant, "TFP201")
    assert len(found) == 1 and found[0][1] is Severity.INFO
    assert "Conv2D" in found[0][2] and "ignore training=" in found[0][2]


def test_premise_batchnorm_called_without_training_never_updates_its_statistics():
    norm = keras.layers.BatchNormalization()
    x = tf.random.normal((8, 3)) + 5.0
    with tf.GradientTape():
        norm(x)
    assert float(tf.reduce_max(tf.abs(norm.moving_mean))) == 0.0
    norm(x, training=True)
    assert float(tf.reduce_min(norm.moving_mean)) > 0.0


# --- TF1 APIs in a branch only TensorFlow 1 runs (held-out rounds 12 and 13: labelled debatable) ---------------------

_TF1_BRANCHES = """
    import tensorflow as tf

    if tf.executing_eagerly():
        print("eager")
    else:
        sess = tf.Session()

    if not tf.executing_eagerly():
        x = tf.placeholder(tf.float32)

    if tf.__version__.startswith("1."):
        init = tf.global_variables_initializer()

    if int(tf.__version__.split(".")[0]) >= 2:
        pass
    else:
        tf.Session()

    sess2 = tf.Session()
"""


def test_tf1_apis_in_branches_tf2_never_runs_are_left_alone_and_the_rest_reported():
    found = [
        (int(f.location.split(":")[-2]), f.code)
        for f in lint_source(textwrap.dedent(_TF1_BRANCHES), path="c.py")
        if f.code.startswith("TFP6")
    ]
    assert found == [(20, "TFP601")]


def test_premise_tf2_runs_eagerly_and_its_version_starts_with_2():
    assert tf.executing_eagerly()
    assert int(tf.__version__.split(".")[0]) >= 2 and not tf.__version__.startswith("1.")
    assert not hasattr(tf, "Session") and not hasattr(tf, "placeholder")


def test_a_keras2_api_under_not_executing_eagerly_is_left_alone():
    source = """
        import tensorflow as tf

        if not tf.executing_eagerly():
            session = tf.keras.backend.get_session()
        other = tf.keras.backend.get_session()
    """
    assert [line for line, _, _ in _found(source, "TFP504")] == [6]


# --- TFP504: Keras 2's layer graph read through attributes Keras 3 removed -----------------------------------------

_KERAS2_GRAPH = """
    import keras


    def input_shapes(model):
        shapes = {}
        for layer in model.layers[1:]:
            for node in layer._inbound_nodes:
                shapes[layer.name] = [shapes.get(parent.name) for parent in node.inbound_layers]
        first = model.layers[1].inbound_nodes[0]
        return shapes, first
"""

_OWN_GRAPH = """
    class Graph:
        def __init__(self):
            self.inbound_layers = []

        def add(self, layer):
            self.inbound_layers.append(layer)
"""


def test_keras2_graph_attributes_are_reported_once_per_attribute():
    assert [line for line, _, _ in _found(_KERAS2_GRAPH, "TFP504")] == [9, 10]


def test_an_attribute_of_that_name_in_a_file_without_keras_is_left_alone():
    assert _found(_OWN_GRAPH, "TFP504") == []


def test_premise_keras3_layers_and_nodes_have_no_keras2_graph_attributes():
    dense = keras.layers.Dense(2)
    keras.Model(inputs := keras.Input((3,)), dense(inputs))
    node = dense._inbound_nodes[0]
    assert not hasattr(node, "inbound_layers") and not hasattr(node, "outbound_layer")
    assert not hasattr(dense, "inbound_nodes") and not hasattr(dense, "outbound_nodes")
    assert [parent.operation.name for parent in node.parent_nodes] == [inputs._keras_history.operation.name]
