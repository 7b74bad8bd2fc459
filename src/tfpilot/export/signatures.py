"""Serving signatures with preprocessing inside the graph.

serving_default takes raw input (uint8 images, named CSV columns) exactly as a client sends it
and returns named outputs, so a TF Serving client never re-implements preprocessing.

classify / regress follow TF Serving's method contracts (tensorflow_serving/apis, the
signature constants of tf.saved_model): one string input `inputs` holding serialized
tf.Example protos; classify returns `classes` (string labels, one per score) and `scores`,
regress returns `outputs` (one float per example). Their method_name is set after writing
(keras' ExportArchive always writes `tensorflow/serving/predict`), see method_names.py.

Tasks. A binary model has one logit z; every signature sees the two-class logits [0, z]
(softmax([0, z]) = [1 - sigmoid(z), sigmoid(z)], exactly), so a binary classifier serves one
probability per class like any other classifier. A multilabel model has one logit per label; its
probabilities are independent sigmoids and `predicted` marks the labels at or above the
threshold saved with the run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from tfpilot.data.preprocessing import Preprocessor
from tfpilot.data.regression import REGRESSION, target_stats, task_of
from tfpilot.data.task import BINARY, MULTILABEL, multilabel_threshold
from tfpilot.errors import ExportError

__all__ = [
    "PREDICT_METHOD",
    "CLASSIFY_METHOD",
    "REGRESS_METHOD",
    "EXAMPLES_INPUT",
    "serving_outputs",
    "class_logits",
    "class_logits_model",
    "multilabel_outputs",
    "regression_predictions",
    "make_serving_fn",
    "make_logits_fn",
    "example_parsing_spec",
    "make_classify_fn",
    "make_regress_fn",
    "add_classify_endpoint",
    "add_regress_endpoint",
]

PREDICT_METHOD = "tensorflow/serving/predict"
CLASSIFY_METHOD = "tensorflow/serving/classify"
REGRESS_METHOD = "tensorflow/serving/regress"
# TF Serving looks the serialized examples up under this exact key (kClassifyInputs/kRegressInputs).
EXAMPLES_INPUT = "inputs"


def serving_outputs(logits: tf.Tensor, class_names: list[str]) -> dict[str, tf.Tensor]:
    logits = tf.cast(logits, tf.float32)
    class_id = tf.argmax(logits, axis=-1, output_type=tf.int64)
    return {
        "probabilities": tf.nn.softmax(logits, axis=-1),
        "class_id": class_id,
        "class_name": tf.gather(tf.constant(class_names, tf.string), class_id),
    }


def class_logits(outputs: tf.Tensor, preprocessor: Preprocessor) -> tf.Tensor:
    """Logits with one column per class: a binary model's single logit z becomes [0, z]."""
    outputs = tf.cast(outputs, tf.float32)
    if task_of(preprocessor) == BINARY and outputs.shape[-1] == 1:
        return tf.concat([tf.zeros_like(outputs), outputs], axis=-1)
    return outputs


def class_logits_model(model: keras.Model, preprocessor: Preprocessor) -> keras.Model:
    """The core model with class logits out: a binary model's z as [0, z] (what TFLite and parity
    run); the model itself otherwise. Shares the model's layers and weights."""
    if task_of(preprocessor) == BINARY and getattr(model, "outputs", None) and model.outputs[0].shape[-1] == 1:
        z = keras.ops.cast(model.outputs[0], "float32")
        return keras.Model(model.inputs, keras.ops.concatenate([keras.ops.zeros_like(z), z], axis=-1))
    return model


def multilabel_outputs(logits: tf.Tensor, preprocessor: Preprocessor) -> dict[str, tf.Tensor]:
    """{probabilities [batch, labels] (independent sigmoids), predicted [batch, labels] int64 0/1}."""
    probabilities = tf.sigmoid(tf.cast(logits, tf.float32))
    predicted = tf.cast(probabilities >= multilabel_threshold(preprocessor), tf.int64)
    return {"probabilities": probabilities, "predicted": predicted}


def regression_predictions(outputs: tf.Tensor, preprocessor: Preprocessor) -> tf.Tensor:
    """[batch] predictions in the target's own units: the model predicts the standardised target."""
    mean, std = target_stats(preprocessor)
    column = tf.cast(outputs, tf.float32)[:, 0]
    return column * std + mean


def make_serving_fn(model: keras.Model, preprocessor: Preprocessor, class_names: list[str]) -> Callable:
    """fn(**raw_features) -> {probabilities, class_id, class_name}; a regression -> {predictions};
    multilabel -> {probabilities, predicted}."""
    names = list(preprocessor.feature_spec)
    task = task_of(preprocessor)

    def serve(*tensors):
        features = dict(zip(names, tensors, strict=False))
        outputs = model(preprocessor(features), training=False)
        if task == REGRESSION:
            return {"predictions": regression_predictions(outputs, preprocessor)}
        if task == MULTILABEL:
            return multilabel_outputs(outputs, preprocessor)
        return serving_outputs(class_logits(outputs, preprocessor), class_names)

    return serve


def make_logits_fn(model: keras.Model, preprocessor: Preprocessor) -> Callable:
    names = list(preprocessor.feature_spec)

    def logits(*tensors):
        features = dict(zip(names, tensors, strict=False))
        # Binary: the two-class logits [0, z], so softmax(logits) is `probabilities` for every classifier.
        return {"logits": class_logits(model(preprocessor(features), training=False), preprocessor)}

    return logits


def example_parsing_spec(preprocessor: Preprocessor) -> dict[str, Any]:
    """tf.Example feature spec for the raw features.

    tf.Example only stores int64, float and bytes lists, so integer features (uint8 pixels)
    travel as int64_list and are cast back; a TF Serving REST :classify request with
    `{"image": [0, 12, ...]}` becomes exactly that. Missing scalar numerics parse as NaN,
    which the preprocessor already maps to the training mean.
    """
    spec: dict[str, Any] = {}
    for name, feature in preprocessor.feature_spec.items():
        dtype = tf.as_dtype(feature["dtype"])
        shape = list(feature["shape"])
        if None in shape:
            raise ExportError(
                f"feature `{name}` has a variable shape {shape}; the classify/regress signatures parse fixed-length "
                "tf.Example features only; remove `classify`/`regress` from export.signatures for this model",
                exit_code=2,
            )
        if dtype == tf.string:
            spec[name] = tf.io.FixedLenFeature(shape, tf.string, default_value="" if not shape else None)
        elif dtype.is_integer or dtype.is_bool:
            spec[name] = tf.io.FixedLenFeature(shape, tf.int64)
        else:
            spec[name] = tf.io.FixedLenFeature(shape, tf.float32, default_value=float("nan") if not shape else None)
    return spec


def _parse(serialized: tf.Tensor, preprocessor: Preprocessor) -> dict[str, tf.Tensor]:
    parsed = tf.io.parse_example(serialized, example_parsing_spec(preprocessor))
    return {name: tf.cast(parsed[name], tf.as_dtype(spec["dtype"])) for name, spec in preprocessor.feature_spec.items()}


def make_classify_fn(model: keras.Model, preprocessor: Preprocessor, class_names: list[str]) -> Callable:
    """fn(serialized tf.Example [batch]) -> {classes [batch, num_classes] string, scores [batch, num_classes]}."""
    if task_of(preprocessor) == REGRESSION:
        raise ExportError(
            "the `classify` signature needs a classifier, but this run is a regression; "
            "use `regress` in export.signatures instead",
            exit_code=2,
        )

    multilabel = task_of(preprocessor) == MULTILABEL

    def classify(serialized):
        outputs = model(preprocessor(_parse(serialized, preprocessor)), training=False)
        logits = class_logits(outputs, preprocessor)
        batch = tf.shape(logits)[0]
        # Every row lists all labels in class-index order, with its score beside it (TF Serving pairs them up).
        classes = tf.tile(tf.constant(class_names, tf.string)[None, :], tf.stack([batch, 1]))
        # Multilabel scores are the per-label sigmoids (TF Serving does not ask scores to sum to 1).
        scores = tf.sigmoid(logits) if multilabel else tf.nn.softmax(logits, axis=-1)
        return {"classes": classes, "scores": scores}

    return classify


def make_regress_fn(model: keras.Model, preprocessor: Preprocessor, class_names: list[str]) -> Callable:
    """fn(serialized tf.Example [batch]) -> {outputs [batch]}.

    A regression: the prediction in the target's units. A binary classifier: P(class_names[1]),
    what TF Estimator's binary heads exported as their regression signature.
    """
    if task_of(preprocessor) == REGRESSION:

        def regress_target(serialized):
            outputs = model(preprocessor(_parse(serialized, preprocessor)), training=False)
            return {"outputs": regression_predictions(outputs, preprocessor)}

        return regress_target
    if len(class_names) != 2 or task_of(preprocessor) == MULTILABEL:
        raise ExportError(
            f"the `regress` signature needs a binary classifier (2 classes, outputs = P(second class)), got "
            f"{len(class_names)} classes {class_names[:5]}; remove `regress` from export.signatures",
            exit_code=2,
        )

    def regress(serialized):
        logits = class_logits(model(preprocessor(_parse(serialized, preprocessor)), training=False), preprocessor)
        return {"outputs": tf.nn.softmax(logits, axis=-1)[:, 1]}

    return regress


def _examples_signature() -> list[tf.TensorSpec]:
    return [tf.TensorSpec([None], tf.string, name=EXAMPLES_INPUT)]


def add_classify_endpoint(
    archive: keras.export.ExportArchive, model: keras.Model, preprocessor: Preprocessor, class_names: list[str]
) -> None:
    archive.add_endpoint(
        "classify", make_classify_fn(model, preprocessor, class_names), input_signature=_examples_signature()
    )


def add_regress_endpoint(
    archive: keras.export.ExportArchive, model: keras.Model, preprocessor: Preprocessor, class_names: list[str]
) -> None:
    archive.add_endpoint(
        "regress", make_regress_fn(model, preprocessor, class_names), input_signature=_examples_signature()
    )
