"""Classes found by issue 30's held-out round 9 (after its figure was recorded), each with a VALID
case (what the rule must leave alone) and an INVALID one (what it must still report). Written for
tfpilot; no outside code is copied."""

from __future__ import annotations

import textwrap

from tfpilot.findings import Severity
from tfpilot.lint.earned import rule_severity
from tfpilot.lint.engine import lint_source


def _findings(source: str, code: str, path: str = "case.py") -> list[tuple[int, Severity]]:
    found = lint_source(textwrap.dedent(source), path=path)
    return [(int(f.location.split(":")[-2]), rule_severity(f)) for f in found if f.code == code]


# --- TFP504: Sequential takes its layers positionally ---------------------------------------------

_SEQUENTIAL = """
    import tensorflow as tf

    class Block(BASE):
        def __init__(self, filters, **kwargs):
            super().__init__(ARGS)
"""


def test_a_sequential_subclass_passing_its_layers_positionally_is_left_alone():
    # VALID: Sequential.__init__(layers=None, trainable=True, name=None)
    source = _SEQUENTIAL.replace("BASE", "tf.keras.Sequential").replace(
        "ARGS", "[tf.keras.layers.Conv2D(filters, 3), tf.keras.layers.ReLU()], name='block'"
    )
    assert _findings(source, "TFP504") == []


def test_a_layer_subclass_passing_kwargs_positionally_is_still_reported():
    # INVALID: Layer.__init__ is keyword-only
    source = _SEQUENTIAL.replace("BASE", "tf.keras.layers.Layer").replace("ARGS", "kwargs")
    assert _findings(source, "TFP504") == [(6, Severity.ERROR)]


# --- TFP404: a model holding hub.KerasLayer is a tf_keras model ------------------------------------

_HUB = """
    import tensorflow as tf
    import tensorflow_hub as hub

    model = tf.keras.Sequential([LAYER, tf.keras.layers.Dense(5)])
    tf.saved_model.save(model, "export/1")
"""


def test_saved_model_save_of_a_model_with_hub_layers_is_a_note():
    # VALID as a claim: Keras 3 refuses hub.KerasLayer, so this model is a tf_keras model, which
    # tf.saved_model.save exports as it is
    source = _HUB.replace("LAYER", 'hub.KerasLayer("https://tfhub.dev/x/1", trainable=False)')
    assert _findings(source, "TFP404") == [(6, Severity.INFO)]


def test_saved_model_save_of_a_keras3_model_is_still_an_error():
    # INVALID: nothing in the file needs Keras 2
    source = _HUB.replace("LAYER", "tf.keras.layers.Dense(8)")
    assert _findings(source, "TFP404") == [(6, Severity.ERROR)]


# --- TFP504: Keras 2 arguments Keras 3 refuses (held-out round 9's missed pitfalls) ---------------

_CHECKPOINT = """
    import tensorflow as tf

    save = tf.keras.callbacks.ModelCheckpoint("ckpt/model.keras", ARGS)
"""


def test_model_checkpoint_with_save_freq_is_left_alone():
    assert _findings(_CHECKPOINT.replace("ARGS", "save_freq=500"), "TFP504") == []


def test_model_checkpoint_with_period_is_reported():
    assert _findings(_CHECKPOINT.replace("ARGS", "period=5"), "TFP504") == [(4, Severity.ERROR)]


_REDUCTION = """
    import tensorflow as tf

    class Pairwise(tf.keras.losses.Loss):
        def __init__(self, reduction=tf.keras.losses.Reduction.VALUE):
            super().__init__(reduction=reduction)
"""


def test_a_reduction_keras3_accepts_is_left_alone():
    assert _findings(_REDUCTION.replace("VALUE", "SUM_OVER_BATCH_SIZE"), "TFP504") == []


def test_reduction_auto_is_reported():
    assert _findings(_REDUCTION.replace("VALUE", "AUTO"), "TFP504") == [(5, Severity.ERROR)]


def test_comparing_with_reduction_auto_is_left_alone():
    # VALID: reading the enum to compare with it never reaches a Keras 3 loss
    source = """
    import tensorflow as tf

    def mean_like(loss):
        return loss.reduction in (tf.keras.losses.Reduction.AUTO, tf.keras.losses.Reduction.SUM_OVER_BATCH_SIZE)
    """
    assert _findings(source, "TFP504") == []


def test_reduction_auto_given_as_a_keyword_is_reported():
    source = """
    import tensorflow as tf

    loss = tf.keras.losses.MeanSquaredError(reduction=tf.keras.losses.Reduction.AUTO)
    """
    assert _findings(source, "TFP504") == [(4, Severity.ERROR)]


def test_names_imported_from_keras_are_reported_too():
    # INVALID: the same refusals reached through from-imports (a bare call, a bare enum)
    source = """
    from tensorflow.keras.callbacks import ModelCheckpoint
    from tensorflow.keras.losses import MeanSquaredError, Reduction

    save = ModelCheckpoint("ckpt/model.keras", period=5)
    loss = MeanSquaredError(reduction=Reduction.AUTO)
    """
    assert _findings(source, "TFP504") == [(5, Severity.ERROR), (6, Severity.ERROR)]
