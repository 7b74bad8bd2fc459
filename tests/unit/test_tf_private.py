"""Every private TensorFlow/Keras API tfpilot uses (all in tfpilot/_tf_private.py) still exists and
behaves as tfpilot uses it; a Keras upgrade that moves one fails here, not in a user's run."""

from __future__ import annotations

import numpy as np


def test_build_compile_state_creates_the_compiled_metrics_variables():
    import keras

    from tfpilot._tf_private import build_compile_state

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    before = {v.path for v in model.metrics_variables}
    build_compile_state(model, (np.zeros((2, 3), "float32"), np.zeros((2, 1), "float32")))
    after = {v.path for v in model.metrics_variables}
    assert any("mean_absolute_error" in path for path in after - before)


def test_validation_split_of_holds_out_the_rows_model_fit_holds_out():
    import keras

    from tfpilot._tf_private import validation_split_of

    x = np.arange(20, dtype="float32").reshape(10, 2)
    y = np.arange(10, dtype="float32")
    held_x, held_y, held_w = validation_split_of((x, y, None), 0.3)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, y, validation_split=0.3, epochs=1, batch_size=10, verbose=0, shuffle=False)
    evaluated = model.evaluate(held_x, held_y, verbose=0, batch_size=10)
    np.testing.assert_allclose(evaluated, history.history["val_loss"][-1], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(held_x), x[7:])
    assert held_w is None


def test_keras_entries_walk_nested_layers_read_the_compile_config_and_switch_off_the_all_reduce():
    import keras

    from tfpilot import _tf_private

    inner = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="inner_dense")], name="inner")
    model = keras.Sequential([keras.Input((3,)), inner, keras.layers.Dense(1, name="head")])
    names = [layer.name for layer in _tf_private.flatten_layers(model)]
    assert "inner_dense" in names and "head" in names and model.name not in names
    assert _tf_private.flatten_layers(model, include_self=True)[0] is model
    assert _tf_private.compile_config(model) == {}
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    assert _tf_private.compile_config(model)["loss"] == "mse"
    assert _tf_private.disable_all_reduce(model.optimizer) is True
    marker = [object()]
    assert model.optimizer._all_reduce_sum_gradients(marker) == marker
    decay = keras.optimizers.AdamW(learning_rate=0.5, weight_decay=0.1)
    decay.build(model.trainable_variables)
    assert _tf_private.optimizer_variables_known(decay) == list(model.trainable_variables)
    kernel = model.trainable_variables[0]
    start = np.asarray(kernel).copy()
    _tf_private.apply_weight_decay(decay, [kernel])
    np.testing.assert_allclose(np.asarray(kernel), start - start * 0.1 * 0.5, rtol=1e-6)
    accumulating = keras.optimizers.SGD(gradient_accumulation_steps=2)
    accumulating.build(model.trainable_variables)
    counter = _tf_private.iteration_counter(accumulating)
    counter.assign_add(3)  # three batches: one update (iterations is the floor of 3 / 2)
    assert int(np.asarray(accumulating.iterations)) == 1 and int(np.asarray(counter)) == 3
    scaled = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam())
    assert _tf_private.iteration_counter(scaled) is scaled.inner_optimizer.iterations
    scaled_accumulating = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(gradient_accumulation_steps=2))
    assert _tf_private.iteration_counter(scaled_accumulating) is scaled_accumulating.inner_optimizer._iterations


def test_first_call_shapes_are_what_a_subclassed_model_was_first_called_on():
    import keras

    from tfpilot import _tf_private

    class Pair(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, inputs):
            return self.dense(inputs[0]) + keras.ops.sum(inputs[1], axis=1, keepdims=True)

    model = Pair()
    assert _tf_private.first_call_shapes(model) is None  # not built yet
    model([np.zeros((2, 3), "float32"), np.zeros((2, 4), "float32")])
    assert [tuple(shape) for shape in _tf_private.first_call_shapes(model)] == [(2, 3), (2, 4)]


def test_tensorflow_entries_are_the_objects_the_doctor_and_the_server_patch_and_call(tmp_path):
    import tensorflow as tf

    from tfpilot import _tf_private

    tensor = tf.constant([[1.0, 2.0]])
    assert isinstance(tensor, _tf_private.framework_ops().EagerTensor)
    base = _tf_private.eager_tensor_base()
    assert all(hasattr(base, name) for name in ("numpy", "__float__", "__int__", "__bool__", "__array__", "__index__"))
    shape, values = _tf_private.eager_shape_and_values(tensor)
    assert shape == (1, 2) and values.tolist() == [[1.0, 2.0]]

    @tf.function
    def double(x):
        return x * 2

    double(tf.constant(1.0))
    assert len(_tf_private.concrete_functions(double)) == 1
    assert not _tf_private.reduce_retracing(double)
    assert _tf_private.reduce_retracing(tf.function(lambda x: x, reduce_retracing=True))
    seen = []

    def record(op_type, inputs, attrs, outputs, op_name=None, graph=None):
        seen.append(op_type)

    _tf_private.op_callbacks().add_op_callback(record)
    try:
        tf.sqrt(tf.constant(4.0))
    finally:
        _tf_private.op_callbacks().remove_op_callback(record)
    assert "Sqrt" in seen
    assert isinstance(double, _tf_private.polymorphic_function().Function)
    dataset = tf.data.Dataset.range(4).map(lambda x: x + 1)
    assert len(_tf_private.dataset_inputs(dataset)) == 1
    graph = _tf_private.map_function_graph(dataset)
    assert not any(_tf_private.op_is_stateful(op) for op in graph.get_operations())
    random_graph = _tf_private.map_function_graph(dataset.map(lambda x: x + tf.random.uniform([], 0, 2, tf.int64)))
    assert any(_tf_private.op_is_stateful(op) for op in random_graph.get_operations())
    assert isinstance(iter(dataset), _tf_private.iterator_ops().OwnedIterator)
    assert _tf_private.backprop().GradientTape is tf.GradientTape
    execute, context = _tf_private.fast_path_execute()
    assert callable(execute) and context is not None
    assert callable(_tf_private.fingerprinting_utils().write_fingerprint)
    assert list(tf.data.Dataset.range(2).apply(_tf_private.sleep_dataset_op().sleep(1))) == [0, 1]
    assert hasattr(_tf_private.xplane_pb2(), "XSpace")
    graph = tf.Graph()
    with graph.as_default():
        feed = tf.compat.v1.placeholder(tf.float32, [None])
        fetch = feed * 3.0
    session = tf.compat.v1.Session(graph=graph)
    from tensorflow.core.protobuf import config_pb2

    options = config_pb2.CallableOptions(feed=[feed.name], fetch=[fetch.name])
    assert _tf_private.session_callable(session, options)(np.array([1.0, 2.0], np.float32))[0].tolist() == [3.0, 6.0]


def test_a_private_module_that_is_gone_is_one_line_naming_the_versions_and_the_feature():
    import keras
    import pytest
    import tensorflow as tf

    from tfpilot._tf_private import PrivateApiMissing, _module

    with pytest.raises(PrivateApiMissing) as caught:
        _module("tensorflow.python.no_such_module", "the doctor's call watcher")
    message = str(caught.value)
    assert "\n" not in message and "the doctor's call watcher" in message
    assert keras.__version__ in message and tf.__version__ in message
