"""Classes found on the round-4 and round-5 corpora after their fixes (issue 30), each with a
VALID case (what the rule must leave alone) and an INVALID one (what it must still report).
Written for tfpilot; no outside code is copied here."""

from __future__ import annotations

import textwrap

from tfpilot.findings import Severity
from tfpilot.lint.earned import rule_severity
from tfpilot.lint.engine import lint_source


def _findings(source: str, code: str, path: str = "case.py") -> list[tuple[int, Severity]]:
    found = lint_source(textwrap.dedent(source), path=path)
    return [(int(f.location.split(":")[-2]), rule_severity(f)) for f in found if f.code == code]


# --- TFP201: a tape that differentiates only watched inputs trains no model ----------------------

_CRITIC = """
    import keras
    import tensorflow as tf

    critic = keras.Sequential([keras.layers.Dense(32, activation="relu"), keras.layers.Dropout(0.2), keras.layers.Dense(1)])
    optimizer = keras.optimizers.Adam()

    def action_gradients(states, actions):
        actions = tf.convert_to_tensor(actions)
        with tf.GradientTape() as tape:
            tape.watch(actions)
            scores = critic(tf.concat([states, actions], -1))
        return tape.gradient(scores, actions)
"""


def test_gradient_with_respect_to_watched_inputs_is_not_a_training_step():
    # VALID: the critic scores the actions; the tape differentiates the actions, not the critic
    assert _findings(_CRITIC, "TFP201") == []


def test_watched_inputs_next_to_the_model_variables_still_train_the_model():
    # INVALID: the same tape also takes the critic's variables: a training step without training=
    source = _CRITIC.replace(
        "return tape.gradient(scores, actions)",
        "grads = tape.gradient(scores, critic.trainable_variables)\n"
        "        optimizer.apply_gradients(zip(grads, critic.trainable_variables))\n"
        "        return tape.gradient(scores, actions)",
    ).replace("with tf.GradientTape() as tape:", "with tf.GradientTape(persistent=True) as tape:")
    assert _findings(source, "TFP201") == [(12, Severity.WARNING)]


def test_watching_the_model_variables_is_no_input_gradient():
    # INVALID: `watch` of the variables the tape then differentiates is a training step
    source = (
        _CRITIC.replace("tape.watch(actions)", "tape.watch(weights)")
        .replace("return tape.gradient(scores, actions)", "return tape.gradient(scores, weights)")
        .replace("actions = tf.convert_to_tensor(actions)", "weights = critic.trainable_variables")
    )
    assert _findings(source, "TFP201") == [(12, Severity.WARNING)]


# --- TFP201: a model frozen for a while (`d.trainable = False` ... `d.trainable = True`) trains ---

_PAIR = """
    import tensorflow as tf
    from tensorflow.keras import Model, layers


    class Pair:
        def __init__(self):
            self.critic = self.make_critic()
            self.critic.trainable = False
            self.combined = Model(self.critic.input, self.critic.output)
            self.critic.trainable = True
            self.optimizer = tf.keras.optimizers.Adam()

        def block(self, units):
            net = tf.keras.Sequential()
            net.add(layers.Dense(units))
            net.add(layers.BatchNormalization())
            return net

        def make_critic(self):
            inputs = layers.Input(shape=[8])
            x = self.block(16)(inputs)
            return Model(inputs, layers.Dense(1)(x))

        def step(self, batch):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(self.critic(batch))
            grads = tape.gradient(loss, self.critic.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.critic.trainable_variables))
"""


def test_model_unfrozen_again_and_built_by_a_block_method_with_batch_norm_is_a_warning():
    # INVALID: frozen only to build the combined model; the block method adds BatchNormalization
    assert _findings(_PAIR, "TFP201") == [(27, Severity.WARNING)]


def test_model_frozen_for_good_is_not_reported():
    # VALID: `trainable = False` and never set back: inference mode on purpose
    source = _PAIR.replace("            self.critic.trainable = True\n", "")
    assert _findings(source, "TFP201") == []


def test_block_method_of_invariant_layers_keeps_the_note():
    # VALID (a note, not a warning): the block builds Dense layers only
    source = _PAIR.replace("net.add(layers.BatchNormalization())", "net.add(layers.Dense(units))")
    assert _findings(source, "TFP201") == [(27, Severity.INFO)]


# --- TFP403: models kept in a dict or list attribute and saved by index ---------------------------

_BLOCKS = """
    import tensorflow as tf


    class Growing:
        def __init__(self):
            self.blocks = {}
            for level in range(2, 5):
                self.blocks[level] = self.make_block(level)

        def make_block(self, level):
            inputs = tf.keras.Input(shape=[level])
            return tf.keras.Model(inputs, tf.keras.layers.Dense(level)(inputs))

        def save(self, directory):
            for i in range(2, 5):
                self.blocks[i].save(f"{directory}/block_{i}")
"""


def test_model_saved_from_a_container_of_models_without_keras_suffix():
    # INVALID: every `self.blocks[...] = ...` stores a Keras model; a bare directory name raises
    assert [line for line, _ in _findings(_BLOCKS, "TFP403")] == [17]


def test_container_saved_with_keras_suffix_or_holding_other_things_is_not_reported():
    # VALID: the name ends in .keras
    assert _findings(_BLOCKS.replace('block_{i}"', 'block_{i}.keras"'), "TFP403") == []
    # VALID: the container also stores something that is no model (a writer with a save method)
    other = _BLOCKS.replace(
        "self.blocks[level] = self.make_block(level)",
        "self.blocks[level] = self.make_block(level)\n            self.blocks[0] = open('log.txt', 'w')",
    )
    assert _findings(other, "TFP403") == []
