"""Classes of failure the seventh outside round of keras-io models showed in tfpilot.fit's export
(issue 29), each with a model of tfpilot's own of the same shape: features that arrive as an
OrderedDict whose keys are not in sorted order (make_csv_dataset), and bool arrays fed to a float
Input (one-hot characters)."""

from __future__ import annotations

import collections

import numpy as np


def _served(path, **inputs):
    import tensorflow as tf

    signature = tf.saved_model.load(str(path)).signatures["serving_default"]
    return signature, next(iter(signature(**inputs).values())).numpy()


def test_ordered_dict_features_keep_their_names_on_their_own_values(tmp_path):
    """tf.nest sorts an OrderedDict's keys and keras.tree keeps its order: names and values paired
    across the two put `movie_id`'s values under `user_id`, and a lookup of one refuses the other's."""
    import keras
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    users = np.array([f"user_{i % 7}" for i in range(64)])
    movies = np.array([f"movie_{i % 5}" for i in range(64)])
    ratings = (np.arange(64) % 3).astype("float32")
    features = collections.OrderedDict([("user_id", users), ("movie_id", movies)])  # not sorted
    data = tf.data.Dataset.from_tensor_slices((features, ratings)).batch(16)

    user_in = keras.Input(shape=(), dtype="string", name="user_id")
    movie_in = keras.Input(shape=(), dtype="string", name="movie_id")
    # No out-of-vocabulary bucket: a user id looked up as a movie fails, as in keras-io's QR embedding.
    user_ids = keras.layers.StringLookup(vocabulary=sorted(set(users)), num_oov_indices=0)(user_in)
    movie_ids = keras.layers.StringLookup(vocabulary=sorted(set(movies)), num_oov_indices=0)(movie_in)
    user_vec = keras.layers.Embedding(7, 3)(user_ids)
    movie_vec = keras.layers.Embedding(5, 3)(movie_ids)
    output = keras.layers.Dense(1)(keras.layers.Concatenate()([user_vec, movie_vec]))
    keras.utils.set_random_seed(0)
    model = keras.Model([user_in, movie_in], output)
    model.compile(optimizer="adam", loss="mse")

    result = tfpilot.fit(model, data, epochs=1, name="ratings", runs_dir=tmp_path)
    assert not [f for f in result.findings if f.code == "FIT-ARTIFACT-NOT-WRITTEN"]
    with np.load(result.run.fit_sample_path) as sample:
        assert all(value.startswith(b"user_") for value in sample["user_id"])
        assert all(value.startswith(b"movie_") for value in sample["movie_id"])
    exported = export_fit_run(RunDir.at(tmp_path / "ratings"))
    signature, served = _served(exported.path, user_id=tf.constant(users[:4]), movie_id=tf.constant(movies[:4]))
    assert {k: v.dtype for k, v in signature.structured_input_signature[1].items()} == {
        "user_id": tf.string,
        "movie_id": tf.string,
    }
    reference = model(collections.OrderedDict([("user_id", users[:4]), ("movie_id", movies[:4])]), training=False)
    np.testing.assert_allclose(served, np.asarray(reference), rtol=1e-5)


def test_bool_arrays_fed_to_a_float_input_serve_as_the_inputs_float(tmp_path):
    """Keras converts a bool array to the float Input it feeds; a DT_BOOL signature would refuse the
    0.0 / 1.0 a REST client sends (keras-io's character LSTM trains on bool one-hot windows)."""
    import keras
    import tensorflow as tf

    import tfpilot
    from tfpilot.export.fit_model import export_fit_run
    from tfpilot.rundir import RunDir

    rng = np.random.default_rng(0)
    x = rng.random((48, 5, 4)) > 0.7  # bool one-hot-like windows
    y = rng.random((48, 4)) > 0.5
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((5, 4)), keras.layers.Flatten(), keras.layers.Dense(4, activation="softmax")])
    model.compile(optimizer="rmsprop", loss="categorical_crossentropy")
    tfpilot.fit(model, x, y, batch_size=16, epochs=1, name="chars", runs_dir=tmp_path)
    exported = export_fit_run(RunDir.at(tmp_path / "chars"))
    windows = x[:3].astype("float32")
    signature, served = _served(exported.path, inputs=tf.constant(windows))
    assert signature.structured_input_signature[1]["inputs"].dtype == tf.float32
    np.testing.assert_allclose(served, model.predict(windows, verbose=0), rtol=1e-5)
