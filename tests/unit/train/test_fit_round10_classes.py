"""Classes the tenth outside round of keras-io models showed in tfpilot.fit's export (issue 29), each
with a model of tfpilot's own of the same shape: a CSV column batched to (batch,) for an Input(shape=(1,))
(Keras adds the trailing 1 itself; a client sends what the Input declares)."""

from __future__ import annotations

import numpy as np


def test_a_batch_column_for_a_one_wide_input_serves_under_the_inputs_shape(tmp_path):
    import keras
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    users = np.array([f"user_{i % 7}" for i in range(64)])
    history = np.stack([np.arange(64) % 4, np.arange(64) % 3], axis=1).astype("float32")
    targets = (np.arange(64) % 2).astype("float32")
    data = tf.data.Dataset.from_tensor_slices(({"user_id": users, "history": history}, targets)).batch(16)

    user_in = keras.Input(shape=(1,), dtype="string", name="user_id")  # the data gives (batch,)
    history_in = keras.Input(shape=(2,), name="history")
    user_vec = keras.layers.Embedding(8, 3)(keras.layers.StringLookup(vocabulary=sorted(set(users)))(user_in))
    # The lookup keeps the Input's rank: (batch, 1, 3). Concatenating with a (batch, 1, 2) view of the
    # history fails on (batch,) strings fed as they are, as keras-io's movielens model did when served.
    joined = keras.layers.Concatenate()([user_vec, keras.layers.Reshape((1, 2))(history_in)])
    output = keras.layers.Dense(1, activation="sigmoid")(keras.layers.Flatten()(joined))
    keras.utils.set_random_seed(0)
    model = keras.Model({"user_id": user_in, "history": history_in}, output)
    model.compile(optimizer="adam", loss="binary_crossentropy")

    result = tfpilot.fit(model, data, epochs=1, name="users", runs_dir=tmp_path)
    assert not [f for f in result.findings if f.code == "FIT-ARTIFACT-NOT-WRITTEN"], result.findings
    exported = export_fit_run(RunDir.at(tmp_path / "users"))
    signature = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    specs = signature.structured_input_signature[1]
    assert specs["user_id"].shape.as_list() == [None, 1] and specs["history"].shape.as_list() == [None, 2]
    served = next(iter(signature(user_id=tf.constant(users[:4, None]), history=tf.constant(history[:4])).values()))
    expected = model({"user_id": tf.constant(users[:4]), "history": tf.constant(history[:4])}, training=False)
    np.testing.assert_allclose(served.numpy(), np.asarray(expected), rtol=1e-5)


def test_the_deferred_guard_prints_no_autograph_warning_in_the_users_run(tmp_path, caplog):
    """Found while benchmarking this round: at steps_per_execution > 1 AutoGraph tried to convert the
    thread pool that builds the guard's variables outside the trace, and TensorFlow printed
    "AutoGraph could not transform <bound method Future.result ...>" in every such run."""
    import logging

    import keras

    import tfpilot

    tf_logger = logging.getLogger("tensorflow")  # TensorFlow's own logger does not propagate to the root
    tf_logger.addHandler(caplog.handler)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", steps_per_execution=16)
    x = np.random.default_rng(0).random((512, 8), dtype=np.float32)
    y = np.arange(512) % 2
    try:
        with caplog.at_level(logging.WARNING, logger="tensorflow"):
            tfpilot.fit(model, x, y, epochs=1, batch_size=16, runs_dir=tmp_path, name="quiet")
    finally:
        tf_logger.removeHandler(caplog.handler)
    assert not [r for r in caplog.records if "AutoGraph could not transform" in r.getMessage()]
