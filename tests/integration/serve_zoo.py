"""A zoo of SavedModels made the way other tools make them, and the requests to send each one.

`tfpilot serve` must answer for models it did not write: Keras 3's `model.export` and
`ExportArchive`, hand-written `tf.Module`s with several signatures, TF1 Estimator-style exports
that take serialized tf.Examples and read an asset, image-bytes models, SavedModels with more
than one MetaGraph, frozen graphs kept as saved_model.pbtxt without variables/, TF Hub-style
reusable modules, TFX Trainer exports, the SavedModel Keras 2 (tf_keras) writes, and signatures
over ragged and sparse tensors (TF2's flattened components, TF1's coo_sparse). Each builder here
writes one such model into `<root>/<name>/1` with that tool's own API (or, where the tool is not
installed, with the TensorFlow calls it makes, as its docstring says) and returns what a client
would ask of it; test_serve_zoo.py serves them all and compares REST and gRPC answers with the
model called in-process. Nothing is downloaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class Query:
    """A predict call: signature ("" sends none, so the server picks serving_default) and batched inputs."""

    signature: str
    inputs: dict[str, np.ndarray]
    # TF Serving's row format needs every input and output to share a batch dimension; a
    # signature with a scalar input or output is asked in columnar form only.
    rows: bool = True


@dataclasses.dataclass(frozen=True)
class ExampleQuery:
    """A classify or regress call: tf.Example features as a REST client writes them."""

    method: str  # "classify" or "regress"
    signature: str
    examples: list[dict[str, Any]]


@dataclasses.dataclass(frozen=True)
class BadRequest:
    """A request TF Serving refuses, with the canonical code it answers (source named in `why`)."""

    code: str  # grpc.StatusCode name, e.g. "INVALID_ARGUMENT"
    fragment: str  # part of the message
    why: str
    # Where TF Serving's REST decoder words the refusal itself (util/json_tensor.cc), its part of the message.
    rest_fragment: str | None = None
    method: str = "predict"  # or "classify", with `examples`
    signature: str = ""
    inputs: dict[str, np.ndarray] | None = None
    examples: list[dict[str, Any]] | None = None


@dataclasses.dataclass(frozen=True)
class ZooModel:
    name: str
    tags: tuple[str, ...]
    queries: list[Query]
    example_queries: list[ExampleQuery]
    bad: BadRequest


def serialized_examples(rows: list[dict[str, Any]]) -> np.ndarray:
    """tf.Example bytes: floats as float_list, ints as int64_list, strings as bytes_list."""
    import tensorflow as tf

    def feature(value: Any) -> tf.train.Feature:
        values = value if isinstance(value, list) else [value]
        if isinstance(values[0], str):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=[v.encode() for v in values]))
        if isinstance(values[0], float):
            return tf.train.Feature(float_list=tf.train.FloatList(value=values))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    return np.array(
        [
            tf.train.Example(
                features=tf.train.Features(feature={k: feature(v) for k, v in row.items()})
            ).SerializeToString()
            for row in rows
        ],
        dtype=object,
    )


def _png(pixels: np.ndarray) -> bytes:
    import tensorflow as tf

    return bytes(tf.io.encode_png(pixels).numpy())


# ----------------------------------------------------------------------------- Keras 3


def _vocabulary_table(vocabulary: Any, *, default_value: int) -> Any:
    """A word -> line-number table over a vocabulary asset, as TF Hub modules and tf.Transform keep them."""
    import tensorflow as tf

    initializer = tf.lookup.TextFileInitializer(
        vocabulary, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER
    )
    return tf.lookup.StaticHashTable(initializer, default_value=default_value)


def build_keras_export(version: Path) -> ZooModel:
    """Keras 3 `Model.export`: one positional input, the output named `output_0` by Keras."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,), name="features")
    hidden = keras.layers.Dense(8, activation="relu")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(3, activation="softmax")(hidden))
    model.export(str(version), format="tf_saved_model", verbose=False)
    (input_name,) = tf.saved_model.load(str(version)).signatures["serving_default"].structured_input_signature[1]
    rows = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)
    return ZooModel(
        name="keras_export",
        tags=("serve",),
        queries=[Query("", {input_name: rows})],
        example_queries=[],
        # predict_util.cc: an input alias the signature does not have.
        bad=BadRequest(
            "INVALID_ARGUMENT",
            f"Signature input alias: {input_name}(feed name: ",
            "TF Serving's RunPredict -> TensorFlow cc/saved_model/util.cc GetInputValues: the signature's input "
            "is not in the request (REST: json_tensor.cc, it is missing from the `inputs` object)",
            rest_fragment=f"Missing named input: {input_name} in 'inputs' object",
            inputs={"nope": rows},
        ),
    )


def build_keras_archive(version: Path) -> ZooModel:
    """`keras.export.ExportArchive` with two endpoints; named inputs; float, int64 and bool outputs."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(1)
    age = keras.Input((1,), name="age")
    city = keras.Input((), dtype="int64", name="city")
    embedded = keras.layers.Embedding(5, 2)(city)
    score = keras.layers.Dense(1)(keras.layers.Concatenate()([age, embedded]))
    model = keras.Model({"age": age, "city": city}, score)

    def serve(age: tf.Tensor, city: tf.Tensor) -> dict[str, tf.Tensor]:
        score = model({"age": age, "city": city}, training=False)
        return {
            "score": score,
            "bucket": tf.cast(tf.math.floor(age[:, 0] / 10.0), tf.int64),
            "is_adult": age[:, 0] >= 18.0,
        }

    def embed(city: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"embedding": model.layers[2](city)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serving_default",
        serve,
        input_signature=[
            tf.TensorSpec([None, 1], tf.float32, name="age"),
            tf.TensorSpec([None], tf.int64, name="city"),
        ],
    )
    archive.add_endpoint("embed", embed, input_signature=[tf.TensorSpec([None], tf.int64, name="city")])
    archive.write_out(str(version), verbose=False)
    ages = np.array([[7.0], [18.0], [45.5]], dtype=np.float32)
    cities = np.array([0, 3, 4], dtype=np.int64)
    return ZooModel(
        name="keras_archive",
        tags=("serve",),
        queries=[Query("", {"age": ages, "city": cities}), Query("embed", {"city": cities})],
        example_queries=[],
        # predict_util.cc: a signature name the model does not have is FAILED_PRECONDITION.
        bad=BadRequest(
            "FAILED_PRECONDITION",
            'Serving signature key "missing" not found.',
            "TF Serving predict_util.cc GetSignatureDef",
            signature="missing",
            inputs={"city": cities},
        ),
    )


def build_keras_text(version: Path) -> ZooModel:
    """Keras 3 `Model.export` of a text model: StringLookup's vocabulary is a table resource the
    SavedModel must initialise on load (its vocabulary file travels under assets/)."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(2)
    words = keras.Input((3,), dtype="string", name="words")
    ids = keras.layers.StringLookup(vocabulary=["red", "green", "blue"])(words)
    pooled = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(4, 2)(ids))
    model = keras.Model(words, keras.layers.Dense(1, activation="sigmoid")(pooled))
    model.export(str(version), format="tf_saved_model", verbose=False)
    (input_name,) = tf.saved_model.load(str(version)).signatures["serving_default"].structured_input_signature[1]
    batch = np.array([[b"red", b"blue", b"unseen"], [b"green", b"green", b"red"]], dtype=object)
    return ZooModel(
        name="keras_text",
        tags=("serve",),
        queries=[Query("", {input_name: batch})],
        example_queries=[],
        # A number where the signature takes strings: json_tensor.cc's type error over REST, the
        # dtype check over gRPC.
        bad=BadRequest(
            "INVALID_ARGUMENT",
            f"input `{input_name}` expects string",
            "TF Serving refuses a tensor of another dtype than the signature's",
            inputs={input_name: np.array([[1.0, 2.0, 3.0]], dtype=np.float32)},
        ),
    )


# ----------------------------------------------------------------------------- tf.Module


def build_module_signatures(version: Path) -> ZooModel:
    """A tf.Module with several signatures and no serving_default: float64, bool, int64, string,
    *_bytes and scalar inputs and outputs."""
    import tensorflow as tf

    class Several(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.offset = tf.Variable(0.25, dtype=tf.float64)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float64, name="x")])
        def typed(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
            return {
                "doubled": 2.0 * x + self.offset,
                "positive": x > 0.0,
                "rounded": tf.cast(tf.round(x), tf.int64),
            }

        @tf.function(
            input_signature=[tf.TensorSpec([None], tf.float32, name="x"), tf.TensorSpec([], tf.float32, name="k")]
        )
        def scale(self, x: tf.Tensor, k: tf.Tensor) -> dict[str, tf.Tensor]:
            return {"y": x * k, "total": tf.reduce_sum(x) * k}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def stats(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
            mean = tf.reduce_mean(x)
            return {"mean": mean, "centered": x - mean}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def text(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
            return {
                "upper": tf.strings.upper(text),
                "length": tf.strings.length(text),
                # Not UTF-8: only b64 can carry it, which the *_bytes name asks for.
                "raw_bytes": tf.strings.join([tf.constant(b"\xff\xfe"), text]),
            }

    module = Several()
    tf.saved_model.save(
        module,
        str(version),
        signatures={"typed": module.typed, "scale": module.scale, "stats": module.stats, "text": module.text},
    )
    return ZooModel(
        name="module_signatures",
        tags=("serve",),
        queries=[
            Query("typed", {"x": np.array([-1.5, 0.0, 2.5, 1e-3], dtype=np.float64)}),
            Query(
                "scale", {"x": np.array([1.0, 2.0, 4.0], dtype=np.float32), "k": np.array(0.5, np.float32)}, rows=False
            ),
            Query("stats", {"x": np.array([1.0, 2.0, 6.0], dtype=np.float32)}, rows=False),
            Query("text", {"text": np.array([b"abc", "h\u00e9llo".encode(), b""], dtype=object)}),
        ],
        example_queries=[],
        # predict_util.cc: no signature name means serving_default, which this model lacks.
        bad=BadRequest(
            "FAILED_PRECONDITION",
            'Serving signature key "serving_default" not found.',
            "TF Serving predict_util.cc: an empty signature name is serving_default",
            inputs={"x": np.array([1.0], dtype=np.float64)},
        ),
    )


def build_image_bytes(version: Path) -> ZooModel:
    """Image classifiers' serving form: encoded image bytes in, a thumbnail (`*_bytes`) and numbers out."""
    import tensorflow as tf

    class Images(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="image_bytes")])
        def serve(self, image_bytes: tf.Tensor) -> dict[str, tf.Tensor]:
            def one(encoded: tf.Tensor) -> tf.Tensor:
                image = tf.io.decode_png(encoded, channels=3)
                return tf.image.resize(tf.cast(image, tf.float32), [4, 4])

            images = tf.map_fn(one, image_bytes, fn_output_signature=tf.TensorSpec([4, 4, 3], tf.float32))
            thumbnails = tf.map_fn(
                lambda image: tf.io.encode_png(tf.cast(image, tf.uint8)),
                images,
                fn_output_signature=tf.TensorSpec([], tf.string),
            )
            return {"mean": tf.reduce_mean(images, axis=[1, 2, 3]), "thumbnail_bytes": thumbnails}

    module = Images()
    tf.saved_model.save(module, str(version), signatures={"serving_default": module.serve})
    rng = np.random.default_rng(3)
    pictures = [rng.integers(0, 255, (6, 5, 3), dtype=np.uint8), np.full((8, 8, 3), 200, np.uint8)]
    return ZooModel(
        name="image_bytes",
        tags=("serve",),
        queries=[Query("", {"image_bytes": np.array([_png(p) for p in pictures], dtype=object)})],
        example_queries=[],
        # The decode op's own InvalidArgument reaches the client with its code, as TF Serving passes op errors on.
        bad=BadRequest(
            "INVALID_ARGUMENT",
            "Unknown image file format",
            "TF Serving returns the Session::Run status: decode_png's InvalidArgument, in the op's words",
            inputs={"image_bytes": np.array([b"not a png"], dtype=object)},
        ),
    )


# ----------------------------------------------------------------------------- TF1 exports


def build_tf1_estimator(version: Path) -> ZooModel:
    """An Estimator-style TF1 export: tf.Example input, classify (serving_default), regress and
    predict signatures, class names from a vocabulary asset, a table initialised by the main op."""
    import tensorflow as tf

    v1 = tf.compat.v1
    vocabulary = version.parent / "classes.txt"
    vocabulary.write_text("cat\ndog\nbird\n")
    graph = tf.Graph()
    with graph.as_default(), v1.Session(graph=graph) as session:
        serialized = v1.placeholder(tf.string, [None], name="input_example_tensor")
        features = v1.parse_example(
            serialized,
            {
                "x": v1.FixedLenFeature([1], tf.float32),
                "color": v1.FixedLenFeature([], tf.string, default_value="red"),
            },
        )
        weights = v1.get_variable("weights", initializer=tf.constant([[0.5, -1.0, 2.0]]))
        is_red = tf.cast(tf.equal(features["color"], "red"), tf.float32)[:, None]
        logits = tf.matmul(features["x"], weights) + is_red
        scores = tf.nn.softmax(logits)
        # Each example's class names, read from the asset as an Estimator's classification head does.
        initializer = v1.lookup.TextFileInitializer(
            tf.constant(str(vocabulary)),
            tf.int64,
            tf.lookup.TextFileIndex.LINE_NUMBER,
            tf.string,
            tf.lookup.TextFileIndex.WHOLE_LINE,
        )
        table = v1.lookup.StaticHashTable(initializer, default_value="UNKNOWN")
        class_ids = tf.tile(tf.range(3, dtype=tf.int64)[None, :], [tf.shape(scores)[0], 1])
        classes = table.lookup(class_ids)
        regression = tf.reduce_sum(features["x"] * 3.0 - 1.0, axis=1, keepdims=True)
        session.run(v1.global_variables_initializer())

        info = v1.saved_model.utils.build_tensor_info
        build = v1.saved_model.signature_def_utils.build_signature_def
        signatures = {
            "serving_default": build(
                {"inputs": info(serialized)},
                {"classes": info(classes), "scores": info(scores)},
                "tensorflow/serving/classify",
            ),
            "regression": build(
                {"inputs": info(serialized)}, {"outputs": info(regression)}, "tensorflow/serving/regress"
            ),
            "predict": build(
                {"examples": info(serialized)},
                {"probabilities": info(scores), "class_ids": info(tf.argmax(scores, axis=1))},
                "tensorflow/serving/predict",
            ),
        }
        builder = v1.saved_model.Builder(str(version))
        builder.add_meta_graph_and_variables(
            session,
            ["serve"],
            signature_def_map=signatures,
            assets_collection=v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS),
            main_op=v1.tables_initializer(),
        )
        builder.save()
    # The model must read its own copy under assets/, as it would on another machine.
    vocabulary.unlink()
    rows: list[dict[str, Any]] = [{"x": [1.5], "color": "red"}, {"x": [-0.5], "color": "blue"}, {"x": [0.0]}]
    return ZooModel(
        name="tf1_estimator",
        tags=("serve",),
        queries=[Query("predict", {"examples": serialized_examples(rows)})],
        example_queries=[
            ExampleQuery("classify", "", rows),
            ExampleQuery("regress", "regression", rows),
        ],
        # classifier.cc: classify on a signature of another method is refused (with the check on
        # or off, a regress signature lacks the classes/scores outputs).
        bad=BadRequest(
            "INVALID_ARGUMENT",
            'Expected classification signature outputs to contain at least one of "classes" or "scores".',
            "TF Serving classifier.cc PreProcessClassification: a signature without classes or scores outputs",
            method="classify",
            signature="regression",
            examples=rows,
        ),
    )


def build_two_meta_graphs(version: Path) -> ZooModel:
    """A TF1 SavedModel with a `serve` and a `train` MetaGraph; the server loads the `serve` one."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default(), v1.Session(graph=graph) as session:
        x = v1.placeholder(tf.float32, [None, 2], name="x")
        scale = v1.get_variable("scale", initializer=tf.constant(3.0))
        served = tf.identity(x * scale, name="served")
        trained = tf.identity(x * scale - 100.0, name="trained")
        session.run(v1.global_variables_initializer())
        info = v1.saved_model.utils.build_tensor_info
        build = v1.saved_model.signature_def_utils.build_signature_def
        builder = v1.saved_model.Builder(str(version))
        builder.add_meta_graph_and_variables(
            session,
            ["serve"],
            signature_def_map={
                "serving_default": build({"x": info(x)}, {"y": info(served)}, "tensorflow/serving/predict")
            },
        )
        builder.add_meta_graph(
            ["train"],
            signature_def_map={
                "serving_default": build({"x": info(x)}, {"y": info(trained)}, "tensorflow/serving/predict"),
                "train_only": build({"x": info(x)}, {"loss": info(trained)}, "tensorflow/serving/predict"),
            },
        )
        builder.save()
    return ZooModel(
        name="two_meta_graphs",
        tags=("serve",),
        queries=[Query("", {"x": np.array([[1.0, -2.0], [0.5, 4.0]], dtype=np.float32)})],
        example_queries=[],
        # The session reports the feed's dtype mismatch as InvalidArgument (TF Serving: the Run status).
        bad=BadRequest(
            "INVALID_ARGUMENT",
            "input `x` expects float32",
            "TF Serving refuses a tensor of another dtype than the signature's (gRPC: the Run status; REST: "
            "json_tensor.cc, the JSON value is not a float)",
            inputs={"x": np.array([[b"a", b"b"]], dtype=object)},
        ),
    )


# The models with a signature that takes serialized tf.Examples, so classify/regress apply.
EXAMPLE_MODELS = ("tf1_estimator",)


def build_frozen_pbtxt(version: Path) -> ZooModel:
    """A frozen graph (constants, no variables) as a text saved_model.pbtxt without variables/, the
    way a converted model looks after a copy through git or object storage, which keep no empty
    directory. TF Serving loads it and skips the restore."""
    import shutil

    import tensorflow as tf
    from google.protobuf import text_format

    from tfpilot.savedmodel import parse_saved_model

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default(), v1.Session(graph=graph) as session:
        x = v1.placeholder(tf.int64, [None], name="ids")
        table = tf.constant([10, 20, 30, 40], dtype=tf.int64)
        looked_up = tf.gather(table, x, name="looked_up")
        info = v1.saved_model.utils.build_tensor_info
        build = v1.saved_model.signature_def_utils.build_signature_def
        builder = v1.saved_model.Builder(str(version))
        builder.add_meta_graph_and_variables(
            session,
            ["serve"],
            signature_def_map={
                "serving_default": build(
                    {"ids": info(x)},
                    {"values": info(looked_up), "is_big": info(looked_up > 25)},
                    "tensorflow/serving/predict",
                )
            },
        )
        builder.save()
    proto = parse_saved_model(version)
    (version / "saved_model.pbtxt").write_text(text_format.MessageToString(proto))
    (version / "saved_model.pb").unlink()
    shutil.rmtree(version / "variables", ignore_errors=True)
    return ZooModel(
        name="frozen_pbtxt",
        tags=("serve",),
        queries=[Query("", {"ids": np.array([0, 3, 2], dtype=np.int64)})],
        example_queries=[],
        # An index outside the table: the Gather op's own InvalidArgument.
        bad=BadRequest(
            "INVALID_ARGUMENT",
            "indices[0] = 7 is not in [0, 4)",
            "TF Serving returns the Session::Run status: GatherV2's InvalidArgument",
            inputs={"ids": np.array([7], dtype=np.int64)},
        ),
    )


# ----------------------------------------------------------------------------- TF Hub, TFX, Keras 2


def build_hub_module(version: Path) -> ZooModel:
    """A TF2 SavedModel in TF Hub's reusable form, as `hub.load` and `hub.KerasLayer` consume it:
    a tf.Module whose `__call__` is a tf.function taking a batch of sentences and a Python
    `training` flag (traced for both values), with `variables`, `trainable_variables` and
    `regularization_losses` attributes, a vocabulary file as a `tf.saved_model.Asset`, and the
    `serving_default` signature added from `__call__`'s inference trace as TF Hub's export docs
    show. Built with tf.saved_model.save, the call TF Hub's own export makes (tensorflow_hub is
    not installed and not needed to write it); nothing is downloaded."""
    import tensorflow as tf

    vocabulary = version.parent / "tokens.txt"
    vocabulary.write_text("<unk>\nthe\ncat\nsat\non\nmat\n")

    class TextEmbedding(tf.Module):
        # TF Hub's attributes are plain tracked lists in the SavedModel; these names shadow
        # tf.Module's computed properties so the lists are saved under them.
        variables: Any = None
        trainable_variables: Any = None

        def __init__(self) -> None:
            super().__init__()
            self.vocabulary = tf.saved_model.Asset(str(vocabulary))
            self.table = _vocabulary_table(self.vocabulary, default_value=0)
            rng = np.random.default_rng(4)
            self.embeddings = tf.Variable(rng.normal(size=(6, 3)).astype(np.float32), name="embeddings")
            # TF Hub's reusable SavedModel attributes (hub.KerasLayer reads them).
            self.variables = [self.embeddings]
            self.trainable_variables = [self.embeddings]
            self.regularization_losses = [tf.function(lambda: 0.01 * tf.reduce_sum(tf.square(self.embeddings)))]

        @tf.function
        def __call__(self, sentences: tf.Tensor, training: bool = False) -> tf.Tensor:
            tokens = tf.strings.split(tf.strings.lower(sentences))
            ids = tf.ragged.map_flat_values(self.table.lookup, tokens)
            vectors = tf.ragged.map_flat_values(tf.gather, self.embeddings, ids)
            pooled = tf.reduce_mean(vectors, axis=1)
            pooled = tf.where(tf.math.is_nan(pooled), tf.zeros_like(pooled), pooled)
            # A Python flag, as TF Hub's reusable SavedModels take it: one trace per value.
            return tf.nn.dropout(pooled, rate=0.5, seed=1) if training else pooled

    module = TextEmbedding()
    spec = tf.TensorSpec([None], tf.string, name="sentences")
    module.__call__.get_concrete_function(spec, training=True)  # traced so hub.KerasLayer can fine-tune
    serving = module.__call__.get_concrete_function(spec, training=False)
    tf.saved_model.save(module, str(version), signatures={"serving_default": serving})
    vocabulary.unlink()  # the model must read its own copy under assets/
    sentences = np.array([b"The cat sat", b"on the MAT", b"unknown words only", b""], dtype=object)
    return ZooModel(
        name="hub_module",
        tags=("serve",),
        queries=[Query("", {"sentences": sentences})],
        example_queries=[],
        bad=BadRequest(
            "INVALID_ARGUMENT",
            "input `sentences` expects string",
            "TF Serving refuses a tensor of another dtype than the signature's (json_tensor.cc over REST)",
            inputs={"sentences": np.array([1, 2], dtype=np.int64)},
        ),
    )


TFX_FEATURES = {
    "trip_miles": ("float", 0.0),
    "payment_type": ("string", ""),
    "trip_seconds": ("int", 0),
}


def build_tfx_trainer(version: Path) -> ZooModel:
    """What a TFX Trainer's run_fn exports: `serving_default` takes serialized tf.Examples as
    `examples` ([None] string), parses them with the raw feature spec, applies a
    Transform-style preprocessing (z-scores with constants the analyzers computed, a vocabulary
    lookup over an asset file, as tft.compute_and_apply_vocabulary writes it) and calls the Keras
    model, returning `{"outputs": ...}`; a `transform_features` signature returns the transformed
    features, as TFX's templates add for evaluation. Keras 3 has no `model.save(save_format="tf")`,
    so the model is kept in a tf.Module and written with tf.saved_model.save, the call run_fn's
    `model.save` made under Keras 2."""
    import keras
    import tensorflow as tf

    vocabulary = version.parent / "vocab_compute_and_apply_vocabulary_vocabulary"
    vocabulary.write_text("Cash\nCredit Card\nNo Charge\n")
    keras.utils.set_random_seed(5)
    numeric = keras.Input((2,), name="numeric")
    payment = keras.Input((), dtype="int64", name="payment_type_xf")
    embedded = keras.layers.Embedding(4, 2)(payment)
    hidden = keras.layers.Dense(4, activation="relu")(keras.layers.Concatenate()([numeric, embedded]))
    model = keras.Model(
        {"numeric": numeric, "payment_type_xf": payment}, keras.layers.Dense(1, activation="sigmoid")(hidden)
    )

    feature_spec = {
        "trip_miles": tf.io.FixedLenFeature([1], tf.float32, default_value=[0.0]),
        "payment_type": tf.io.FixedLenFeature([1], tf.string, default_value=[""]),
        "trip_seconds": tf.io.FixedLenFeature([1], tf.int64, default_value=[0]),
    }

    class Exported(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.vocabulary = tf.saved_model.Asset(str(vocabulary))
            # Out-of-vocabulary values get the bucket after the vocabulary, as tft's num_oov_buckets=1.
            self.table = _vocabulary_table(self.vocabulary, default_value=3)

        def transform(self, parsed: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
            miles = (parsed["trip_miles"] - 5.0) / 2.5
            seconds = (tf.cast(parsed["trip_seconds"], tf.float32) - 600.0) / 300.0
            return {
                "numeric": tf.concat([miles, seconds], axis=1),
                "payment_type_xf": self.table.lookup(parsed["payment_type"][:, 0]),
            }

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve_tf_examples_fn(self, serialized: tf.Tensor) -> dict[str, tf.Tensor]:
            transformed = self.transform(tf.io.parse_example(serialized, feature_spec))
            return {"outputs": self.model(transformed, training=False)}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def transform_features_fn(self, serialized: tf.Tensor) -> dict[str, tf.Tensor]:
            return self.transform(tf.io.parse_example(serialized, feature_spec))

    exported = Exported()
    tf.saved_model.save(
        exported,
        str(version),
        signatures={
            "serving_default": exported.serve_tf_examples_fn,
            "transform_features": exported.transform_features_fn,
        },
    )
    vocabulary.unlink()  # the model must read its own copy under assets/
    rows: list[dict[str, Any]] = [
        {"trip_miles": 3.2, "payment_type": "Cash", "trip_seconds": 420},
        {"trip_miles": 11.0, "payment_type": "Credit Card", "trip_seconds": 1500},
        {"trip_miles": 0.4, "payment_type": "Bitcoin"},
    ]
    examples = serialized_examples(rows)
    return ZooModel(
        name="tfx_trainer",
        tags=("serve",),
        queries=[Query("", {"examples": examples}), Query("transform_features", {"examples": examples})],
        example_queries=[],
        # classifier.cc PreProcessClassification (method names unchecked, TF Serving's default): one
        # input and one output pass, then the input's key is `examples`, not `inputs`.
        bad=BadRequest(
            "INVALID_ARGUMENT",
            "No classification inputs found in SignatureDef: ",
            "TF Serving classifier.cc PreProcessClassification: the one input is not keyed `inputs`",
            method="classify",
            examples=rows,
        ),
    )


def build_keras2_legacy(version: Path) -> ZooModel:
    """The SavedModel Keras 2 (tf_keras) writes for `model.save(path, save_format="tf")` of a
    Sequential model, built with TensorFlow's own APIs: the project's environment has Keras 3 only
    (`tf-keras` is on PyPI, but not in the test dependencies, and the shared environment is not
    changed by hand). What a server and a loader see is reproduced: the root's checkpoint
    dependencies `layer_with_weights-0`, `layer-0`, ... (tf_keras's hyphenated names), layers as
    trackables holding `kernel`/`bias` variables named as Keras 2 names them (`dense/kernel:0`),
    the root's `variables`/`trainable_variables`/`non_trainable_variables` lists,
    `serving_default` traced from the model's call with the input named after the first layer
    (`dense_input`, [None, 4]) and the output keyed by the last layer's name (`dense_1`), and
    `keras_metadata.pb` beside saved_model.pb: a SavedMetadata (TF's own proto for it) naming the
    root `_tf_keras_sequential` and each layer `_tf_keras_layer` with a short config. tf_keras
    also saves its `keras_api` call functions and the full layer configs; TF Serving reads
    neither, and neither is reproduced."""
    import json

    import tensorflow as tf
    from tensorflow.python.keras.protobuf import saved_metadata_pb2, versions_pb2

    rng = np.random.default_rng(6)

    class Dense(tf.Module):
        def __init__(self, name: str, units_in: int, units_out: int, activation: Callable[[tf.Tensor], tf.Tensor]):
            super().__init__(name=name)
            with tf.name_scope(name):
                self.kernel = tf.Variable(rng.normal(size=(units_in, units_out)).astype(np.float32), name="kernel")
                self.bias = tf.Variable(np.full(units_out, 0.1, np.float32), name="bias")
            self.activation = activation

        def __call__(self, x: tf.Tensor) -> tf.Tensor:
            return self.activation(tf.matmul(x, self.kernel) + self.bias)

    class Sequential(tf.Module):
        variables: Any = None  # saved as plain lists, as tf_keras saves them (shadowing tf.Module's properties)
        trainable_variables: Any = None
        non_trainable_variables: Any = None

        def __init__(self) -> None:
            super().__init__(name="sequential")
            layers = (Dense("dense", 4, 5, tf.nn.relu), Dense("dense_1", 5, 2, tf.identity))
            for index, layer in enumerate(layers):
                setattr(self, f"layer_with_weights-{index}", layer)
                setattr(self, f"layer-{index}", layer)
            weights = [weight for layer in layers for weight in (layer.kernel, layer.bias)]
            self.variables = list(weights)
            self.trainable_variables = list(weights)
            self.non_trainable_variables = []

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="dense_input")])
        def serving_default(self, dense_input: tf.Tensor) -> dict[str, tf.Tensor]:
            hidden = getattr(self, "layer_with_weights-0")(dense_input)
            return {"dense_1": getattr(self, "layer_with_weights-1")(hidden)}

    model = Sequential()
    tf.saved_model.save(model, str(version), signatures={"serving_default": model.serving_default})
    metadata = saved_metadata_pb2.SavedMetadata()
    nodes = [("root", "_tf_keras_sequential", "sequential", "Sequential")]
    nodes += [
        (f"root.layer_with_weights-{i}", "_tf_keras_layer", n, "Dense") for i, n in enumerate(["dense", "dense_1"])
    ]
    for node_id, (path, identifier, name, class_name) in enumerate(nodes):
        metadata.nodes.add(
            node_id=node_id,
            node_path=path,
            identifier=identifier,
            version=versions_pb2.VersionDef(producer=2, min_consumer=1),
            metadata=json.dumps({"name": name, "class_name": class_name, "trainable": True, "dtype": "float32"}),
        )
    (version / "keras_metadata.pb").write_bytes(metadata.SerializeToString())
    rows = np.array([[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0], [-3.0, 0.25, 0.0, 4.0]], dtype=np.float32)
    return ZooModel(
        name="keras2_legacy",
        tags=("serve",),
        queries=[Query("", {"dense_input": rows})],
        example_queries=[],
        # A feature count the kernel cannot take: the feed is not checked against the declared
        # [-1,4]; MatMul's own InvalidArgument answers, as TF Serving passes the Run status on.
        bad=BadRequest(
            "INVALID_ARGUMENT",
            "Matrix size-incompatible: In[0]: [1,3], In[1]: [4,5]",
            "TF Serving feeds the tensor unchecked and returns the Session::Run status: MatMul's InvalidArgument",
            inputs={"dense_input": np.array([[1.0, 2.0, 3.0]], dtype=np.float32)},
        ),
    )


def build_ragged_sparse(version: Path) -> ZooModel:
    """Signatures over composite tensors. tf.saved_model.save flattens a RaggedTensorSpec or
    SparseTensorSpec input into its component tensors in the SignatureDef (`tokens` = flat
    values, `tokens_1` = row splits; `ids` = indices, `ids_1` = values, `ids_2` = dense shape),
    and TF Serving serves those as ordinary dense inputs, so clients send the components (in
    columnar form: their first dimensions differ). A ragged *output* is stored as a
    `composite_tensor` TensorInfo without a tensor name; TF Serving fetches the empty name and
    the Session refuses it (see the bad request)."""
    import tensorflow as tf

    class Composite(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = tf.Variable(2.0)

        @tf.function(
            input_signature=[tf.RaggedTensorSpec([None, None], tf.float32, ragged_rank=1, row_splits_dtype=tf.int64)]
        )
        def ragged(self, tokens: tf.RaggedTensor) -> dict[str, tf.Tensor]:
            return {"sums": tf.reduce_sum(tokens, axis=1) * self.scale, "lengths": tokens.row_lengths()}

        @tf.function(input_signature=[tf.SparseTensorSpec([None, 5], tf.float32)])
        def sparse(self, ids: tf.SparseTensor) -> dict[str, tf.Tensor]:
            return {
                "dense": tf.sparse.to_dense(ids) * self.scale,
                "count": tf.sparse.reduce_sum(tf.sparse.map_values(tf.ones_like, ids), axis=1, output_is_sparse=False),
            }

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
        def ragged_output(self, x: tf.Tensor) -> dict[str, Any]:
            pieces = tf.RaggedTensor.from_row_lengths(x, tf.stack([1, tf.size(x, out_type=tf.int32) - 1]))
            return {"pieces": pieces, "total": tf.reduce_sum(x, keepdims=True)}

    module = Composite()
    tf.saved_model.save(
        module,
        str(version),
        signatures={"serving_default": module.ragged, "sparse": module.sparse, "ragged_output": module.ragged_output},
    )
    return ZooModel(
        name="ragged_sparse",
        tags=("serve",),
        queries=[
            Query(
                "",
                {
                    "tokens": np.array([1.0, 2.0, 3.0, 4.5, -1.0], dtype=np.float32),
                    "tokens_1": np.array([0, 2, 2, 5], dtype=np.int64),
                },
                rows=False,
            ),
            Query(
                "sparse",
                {
                    "ids": np.array([[0, 1], [0, 4], [2, 3]], dtype=np.int64),
                    "ids_1": np.array([1.5, -2.0, 3.0], dtype=np.float32),
                    "ids_2": np.array([3, 5], dtype=np.int64),
                },
                rows=False,
            ),
        ],
        example_queries=[],
        # TF Serving's RunPredict fetches every output's TensorInfo name; the ragged output's is
        # empty, and TensorFlow's graph_execution_state.cc (ValidateFeedAndFetchDevices) refuses
        # the fetch `:0` with InvalidArgument.
        bad=BadRequest(
            "INVALID_ARGUMENT",
            "Tensor :0, specified in either feed_devices or fetch_devices was not found in the Graph",
            "TF Serving predict_util.cc fetches a composite output's empty tensor name; TensorFlow's "
            "graph_execution_state.cc ValidateFeedAndFetchDevices refuses it",
            signature="ragged_output",
            inputs={"x": np.array([1.0, 2.0, 3.0], dtype=np.float32)},
        ),
    )


def build_tf1_sparse(version: Path) -> ZooModel:
    """A TF1 export with a SparseTensor input, as an Estimator's raw serving receiver over a
    `sparse_placeholder` writes it: build_tensor_info stores the input as a `coo_sparse`
    TensorInfo (indices, values and dense-shape tensor names) with no tensor name of its own,
    beside a dense signature. TF Serving loads the model, answers the dense signature and refuses
    every request to the sparse one (see the bad request)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default(), v1.Session(graph=graph) as session:
        ids = v1.sparse_placeholder(tf.float32, [None, 4], name="ids")
        weights = v1.get_variable("weights", initializer=tf.constant([1.0, 2.0, 3.0, 4.0]))
        weighted = tf.reduce_sum(tf.sparse.to_dense(ids) * weights, axis=1, name="weighted")
        x = v1.placeholder(tf.float32, [None, 4], name="x")
        dense = tf.reduce_sum(x * weights, axis=1, name="dense")
        session.run(v1.global_variables_initializer())
        info = v1.saved_model.utils.build_tensor_info
        build = v1.saved_model.signature_def_utils.build_signature_def
        builder = v1.saved_model.Builder(str(version))
        builder.add_meta_graph_and_variables(
            session,
            ["serve"],
            signature_def_map={
                "serving_default": build(
                    {"ids": info(ids)}, {"weighted": info(weighted)}, "tensorflow/serving/predict"
                ),
                "dense": build({"x": info(x)}, {"weighted": info(dense)}, "tensorflow/serving/predict"),
            },
        )
        builder.save()
    return ZooModel(
        name="tf1_sparse",
        tags=("serve",),
        queries=[Query("dense", {"x": np.array([[1.0, 0.0, 0.0, 2.0], [0.0, 0.5, 0.0, 0.0]], dtype=np.float32)})],
        example_queries=[],
        # predict_util.cc feeds the request tensor under the TensorInfo's name, empty for
        # coo_sparse; TensorFlow's graph_execution_state.cc (ValidateFeedAndFetchDevices)
        # refuses the feed `:0` with InvalidArgument.
        bad=BadRequest(
            "INVALID_ARGUMENT",
            "Tensor :0, specified in either feed_devices or fetch_devices was not found in the Graph",
            "TF Serving predict_util.cc feeds a coo_sparse input's empty tensor name; TensorFlow's "
            "graph_execution_state.cc ValidateFeedAndFetchDevices refuses it",
            inputs={"ids": np.array([[0.0, 1.0, 0.0, 0.0]], dtype=np.float32)},
        ),
    )


BUILDERS: dict[str, Callable[[Path], ZooModel]] = {
    "keras_export": build_keras_export,
    "keras_archive": build_keras_archive,
    "keras_text": build_keras_text,
    "module_signatures": build_module_signatures,
    "image_bytes": build_image_bytes,
    "tf1_estimator": build_tf1_estimator,
    "two_meta_graphs": build_two_meta_graphs,
    "frozen_pbtxt": build_frozen_pbtxt,
    "hub_module": build_hub_module,
    "tfx_trainer": build_tfx_trainer,
    "keras2_legacy": build_keras2_legacy,
    "ragged_sparse": build_ragged_sparse,
    "tf1_sparse": build_tf1_sparse,
}


def build_zoo(root: Path) -> dict[str, ZooModel]:
    """Every model of the zoo as version 1 under `root/<name>`."""
    zoo = {}
    for name, build in BUILDERS.items():
        version = root / name / "1"
        version.parent.mkdir(parents=True)
        zoo[name] = build(version)
        assert zoo[name].name == name
    return zoo
