"""The classes that held-out round 5 showed missed or wrongly reported (issue 30), each with a
VALID case (what the rule must leave alone, or keep a note) and an INVALID one (what it must
report, where). Written for tfpilot; no outside code is copied here."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tfpilot.findings import Severity
from tfpilot.lint.earned import rule_severity
from tfpilot.lint.engine import lint_source


def _findings(source: str, code: str, path: str = "case.py") -> list[tuple[int, Severity]]:
    found = lint_source(textwrap.dedent(source), path=path)
    return [(int(f.location.split(":")[-2]), rule_severity(f)) for f in found if f.code == code]


def _write(root: Path, name: str, source: str) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return str(path)


# --- TFP201: a warning is earned by a layer that depends on training ----------------------------


def test_model_the_linter_cannot_resolve_gets_a_note_one_with_dropout_a_warning():
    source = """
        import keras
        import tensorflow as tf

        class Agent:
            def __init__(self, critic_fn):
                self.critic = critic_fn()

            def update(self, states, targets):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(self.critic(states) - targets))
                grads = tape.gradient(loss, self.critic.trainable_variables)
                return grads

        def ensemble_step(models, states):
            for model in models:
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(model(states))
                tape.gradient(loss, model.trainable_variables)
    """
    # VALID (a note, not a warning): chosen by a constructor parameter, iterated from a list
    assert _findings(source, "TFP201") == [(11, Severity.INFO), (18, Severity.INFO)]
    dropout = """
        import keras
        import tensorflow as tf

        class Agent:
            def __init__(self):
                self.critic = keras.Sequential([keras.layers.Dense(8), keras.layers.Dropout(0.2), keras.layers.Dense(1)])

            def update(self, states, targets):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(self.critic(states) - targets))
                return tape.gradient(loss, self.critic.trainable_variables)
    """
    # INVALID: resolved, and its Dropout is off without training=True
    assert _findings(dropout, "TFP201") == [(11, Severity.WARNING)]


def test_model_of_another_module_is_judged_by_its_layers(tmp_path):
    _write(
        tmp_path,
        "nets.py",
        """
        import keras

        class Critic(keras.Model):
            def __init__(self):
                super().__init__()
                self.hidden = keras.layers.Dense(8)
                self.out = keras.layers.Dense(1)

            def call(self, x):
                return self.out(self.hidden(x))

        class NoisyCritic(keras.Model):
            def __init__(self):
                super().__init__()
                self.norm = keras.layers.BatchNormalization()
                self.out = keras.layers.Dense(1)

            def call(self, x):
                return self.out(self.norm(x))
        """,
    )
    train = """
        import tensorflow as tf
        from nets import {name}

        critic = {name}()

        def step(states, targets):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(critic(states) - targets))
            return tape.gradient(loss, critic.trainable_variables)
    """
    path = str(tmp_path / "train.py")
    assert _findings(train.format(name="Critic"), "TFP201", path) == [(9, Severity.INFO)]
    assert _findings(train.format(name="NoisyCritic"), "TFP201", path) == [(9, Severity.WARNING)]


def test_a_model_the_tape_does_not_differentiate_is_not_reported():
    source = """
        import keras
        import tensorflow as tf

        def build(units):
            return keras.Sequential([keras.layers.Dense(units), keras.layers.Dropout(0.1), keras.layers.Dense(1)])

        actor = build(4)
        critic = build(8)

        def update_actor(states):
            with tf.GradientTape() as tape:
                actions = actor(states, training=True)
                loss = -tf.reduce_mean(critic(tf.concat([states, actions], -1)))
            grads = tape.gradient(loss, {sources})
            return grads
    """
    # VALID: the critic scores the actor's actions; only the actor's variables are differentiated
    assert _findings(source.format(sources="actor.trainable_variables"), "TFP201") == []
    # INVALID: the same tape also trains the critic
    both = "actor.trainable_variables + critic.trainable_variables"
    assert _findings(source.format(sources=both), "TFP201") == [(14, Severity.WARNING)]


# --- TFP507: any Python value passed positionally -----------------------------------------------


def test_python_value_passed_positionally_through_a_base_class_of_another_module(tmp_path):
    _write(
        tmp_path,
        "agents/base.py",
        """
        import keras

        class Actor(keras.Model):
            def call(self, states, test=False):
                return states

        class Agent:
            def __init__(self):
                self.actor = Actor()

            def get_action(self, state, test=False):
                return self._body(state, test)

            def _body(self, state, test):
                return self.actor(state, test)
        """,
    )
    _write(tmp_path, "agents/__init__.py", "")
    child = """
        from agents.base import Agent

        class EncodedAgent(Agent):
            def _body(self, state, {flag}):
                return self.actor(state, {flag})
    """
    path = str(tmp_path / "encoded.py")
    # INVALID: the base class's get_action passes its `test=False` on
    assert _findings(child.format(flag="test"), "TFP507", path) == [(6, Severity.ERROR)]
    # VALID: a parameter nothing fills with a Python value (`mask`, never passed by the base class)
    assert _findings(child.format(flag="mask"), "TFP507", path) == []
    literal = """
        import keras

        dense = keras.layers.Dense(2)
        y = dense(x, 3)
        z = dense(x, None)
    """
    assert _findings(literal, "TFP507") == [(5, Severity.ERROR)]


# --- TFP406: weights paths that end in a step number --------------------------------------------


def test_weights_paths_ending_in_a_step_number_or_a_tf_checkpoint_name():
    invalid = """
        import os
        import tensorflow as tf

        def train(model, model_dir, step, epochs):
            model.save_weights(os.path.join(model_dir, "weights_step_{}".format(step)))
            for i in range(epochs):
                path = os.path.join(model_dir, "model_epoch_{:d}".format(i + 1))
                model.save_weights(path)
                model.load_weights(path)
            model.load_weights(tf.train.latest_checkpoint(model_dir))
            model.save_weights(f"{model_dir}/final_{step}")
    """
    assert _findings(invalid, "TFP406") == [
        (6, Severity.ERROR),
        (9, Severity.ERROR),
        (10, Severity.ERROR),
        (11, Severity.ERROR),
        (12, Severity.ERROR),
    ]
    valid = """
        import os

        def train(model, model_dir, step, name):
            model.save_weights(os.path.join(model_dir, "weights_step_{}.weights.h5".format(step)))
            model.save_weights(os.path.join(model_dir, "{}".format(name)))
            model.load_weights(os.path.join(model_dir, "best.h5"))
            model.load_weights(os.path.join(model_dir, "model_{}".format(name)))
    """
    assert _findings(valid, "TFP406") == []


# --- TFP504: removed model, layer and LossScaleOptimizer APIs -----------------------------------


def test_predict_classes_layer_output_shape_and_loss_scale_methods():
    invalid = """
        import numpy as np
        import tensorflow as tf

        model = tf.keras.models.load_model("m.keras")
        labels = model.predict_classes(np.zeros((1, 3)))
        for i, layer in enumerate(model.layers):
            print(i, layer.name, layer.output_shape)
        optimizer = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam())

        def step(x):
            with tf.GradientTape() as tape:
                loss = optimizer.get_scaled_loss(tf.reduce_sum(model(x, training=True)))
            grads = optimizer.get_unscaled_gradients(tape.gradient(loss, model.trainable_variables))
            return grads
    """
    assert _findings(invalid, "TFP504") == [
        (6, Severity.ERROR),
        (8, Severity.ERROR),
        (13, Severity.ERROR),
        (14, Severity.ERROR),
    ]
    valid = """
        import tensorflow as tf

        class Trainer:
            def predict_classes(self, split):
                return split

        trainer = Trainer()
        trainer.predict_classes("test")
        model = tf.keras.models.load_model("m.keras")
        print(model.output_shape)
        scaler = Scaler()
        scaler.get_scaled_loss(1.0)
    """
    assert _findings(valid, "TFP504") == []


# --- TFP206: a sigmoid discriminator behind a functional wrapper --------------------------------


def test_sigmoid_output_of_a_factory_wrapper_with_from_logits():
    source = """
        import tensorflow as tf
        from tensorflow.keras.layers import Dense, Flatten, Input
        from tensorflow.keras.models import Model, Sequential

        cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits={flag})

        def discriminator_loss(real_output, fake_output):
            return cross_entropy(tf.ones_like(real_output), real_output) + cross_entropy(
                tf.zeros_like(fake_output), fake_output
            )

        class GAN:
            def __init__(self):
                self.discriminator = self.build_discriminator()

            def build_discriminator(self):
                model = Sequential()
                model.add(Flatten())
                model.add(Dense(1, activation="{activation}"))
                img = Input(shape=(28, 28, 1))
                validity = model(img)
                return Model(img, validity)

            def step(self, images, fakes):
                with tf.GradientTape() as tape:
                    loss = discriminator_loss(
                        self.discriminator(images, training=True), self.discriminator(fakes, training=True)
                    )
                return tape.gradient(loss, self.discriminator.trainable_variables)
    """
    assert _findings(source.format(flag="True", activation="sigmoid"), "TFP206") == [(6, Severity.ERROR)]
    assert _findings(source.format(flag="False", activation="sigmoid"), "TFP206") == []
    assert _findings(source.format(flag="True", activation="linear"), "TFP206") == []


# --- TFP506: the model is built by a class of another module ------------------------------------


def test_seed_in_an_entry_point_whose_model_builder_lives_in_another_module(tmp_path):
    _write(
        tmp_path,
        "project/model/builder.py",
        """
        import tensorflow as tf

        class ModelBuilder:
            def __call__(self):
                inputs = tf.keras.Input((3,))
                return tf.keras.Model(inputs, tf.keras.layers.Dense(1)(inputs))
        """,
    )
    _write(tmp_path, "project/model/__init__.py", "from project.model.builder import ModelBuilder\n")
    _write(tmp_path, "project/__init__.py", "")
    main = """
        import tensorflow as tf
        from project.model import ModelBuilder

        def main(seed):
            {seed}
            model = ModelBuilder()()
            return model
    """
    path = str(tmp_path / "project" / "__main__.py")
    # INVALID: a TF seed alone; the builder's Keras layers draw from Keras' own generator
    assert _findings(main.format(seed="tf.random.set_seed(seed)"), "TFP506", path) == [(6, Severity.WARNING)]
    # VALID: Keras seeded
    assert _findings(main.format(seed="tf.keras.utils.set_random_seed(seed)"), "TFP506", path) == []


def test_models_a_subclass_passes_to_its_base_init_are_resolved():
    source = """
        import tensorflow as tf
        from tensorflow.keras import layers, Sequential

        class GAN:
            def __init__(self, generator, discriminator):
                self.G = generator
                self.D = discriminator

            def train_step(self, z, real):
                with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
                    fake = self.G(z)
                    loss = tf.reduce_mean(self.D(fake)) - tf.reduce_mean(self.D(real, training=True))
                g_tape.gradient(loss, self.G.trainable_variables)
                d_tape.gradient(loss, self.D.trainable_variables)

        class DCGAN(GAN):
            def __init__(self):
                GAN.__init__(self, self.Generator(), self.Discriminator())

            def Generator(self):
                return Sequential([layers.Dense(8), layers.{layer}(), layers.Dense(4)])

            def Discriminator(self):
                return Sequential([layers.Dense(1)])
    """
    # INVALID: the generator DCGAN passes to GAN.__init__ has BatchNormalization
    assert _findings(source.format(layer="BatchNormalization"), "TFP201") == [
        (12, Severity.WARNING),
        (13, Severity.INFO),
    ]
    # VALID (a note): a generator of training-independent layers
    assert _findings(source.format(layer="ReLU"), "TFP201") == [(12, Severity.INFO), (13, Severity.INFO)]
