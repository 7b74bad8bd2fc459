"""The classes that held-out round 4 showed missed or wrongly reported (issue 30 part 5), each
with a VALID case (what the rule must leave alone, or keep a note) and an INVALID one (what it
must report, where). Written for tfpilot; no outside code is copied here."""

from __future__ import annotations

import textwrap

from tfpilot.findings import Severity
from tfpilot.lint.engine import lint_source


def _findings(source: str, code: str, path: str = "case.py") -> list[tuple[int, Severity]]:
    found = lint_source(textwrap.dedent(source), path=path)
    return [(int(f.location.split(":")[-2]), f.severity) for f in found if f.code == code]


# --- TFP406: save paths that are not literals at the call ---------------------------------------


def test_save_weights_path_joined_concatenated_or_formatted_a_few_lines_up():
    invalid = """
        import os
        import keras

        def train(model, save_dir, name, epoch):
            filepath = os.path.join(save_dir, "vae_mlp.tf")
            model.save_weights(filepath)
            filename = name + ".tf"
            model.save_weights(os.path.join(save_dir, filename))
            model.save_weights(f"{save_dir}/{filename}")
            stem = "actor-%s.h5" % epoch
            model.save_weights(stem)
    """
    assert _findings(invalid, "TFP406") == [
        (7, Severity.ERROR),
        (9, Severity.ERROR),
        (10, Severity.ERROR),
        (12, Severity.ERROR),
    ]
    valid = invalid.replace('"vae_mlp.tf"', '"vae_mlp.weights.h5"').replace('".tf"', '".weights.h5"')
    valid = valid.replace('"actor-%s.h5"', '"actor-%s.weights.h5"')
    assert _findings(valid, "TFP406") == []


def test_save_weights_path_bound_in_branches_takes_the_values_that_reach_the_call():
    # the save in the else branch only sees the else branch's name; the first branch's name is
    # the user's command line, which the linter cannot read
    invalid = """
        import os
        import keras

        def main(model, args, save_dir):
            if args.weights:
                filepath = os.path.join(save_dir, args.weights)
                model.load_weights(filepath)
            else:
                model.fit(x, y)
                filepath = os.path.join(save_dir, "vae.tf")
                model.save_weights(filepath)
    """
    assert _findings(invalid, "TFP406") == [(12, Severity.ERROR)]
    # a later assignment does not reach an earlier call; an earlier one overwritten does not either
    valid = """
        import keras

        def main(model, args):
            path = "ckpt/model.ckpt"
            checkpoint.save(path)
            path = "ckpt/model.weights.h5"
            model.save_weights(path)
            if args.weights:
                other = args.weights
            else:
                other = "ckpt/other.weights.h5"
            model.save_weights(other)
            later = "x.tf"
    """
    assert _findings(valid, "TFP406") == []
    # after an if/else, both branches reach: the literal branch is a real failure on its path
    both = valid.replace('other = "ckpt/other.weights.h5"', 'other = "ckpt/other.tf"')
    assert _findings(both, "TFP406") == [(13, Severity.ERROR)]


def test_save_weights_path_held_in_self_attributes_and_command_line_defaults():
    invalid = """
        import argparse
        import os
        from absl import flags
        from absl.flags import FLAGS
        import keras

        flags.DEFINE_string("output", "./checkpoints/yolo.tf", "path to output")

        class Agent:
            def __init__(self, save_dir, dataset):
                self.weights_file = "dqn.h5"
                model_name = "fcn-" + dataset
                model_name += "-best.h5"
                self.weights_path = os.path.join(save_dir, model_name)

            def save(self):
                self.q_model.save_weights(self.weights_file)
                self.q_model.save_weights(self.weights_path)

        def main(_argv):
            yolo.save_weights(FLAGS.output)
            parser = argparse.ArgumentParser()
            parser.add_argument("-o", "--weights-out", default="run/model.tf")
            args = parser.parse_args()
            yolo.save_weights(args.weights_out)
    """
    assert _findings(invalid, "TFP406") == [
        (18, Severity.ERROR),
        (19, Severity.ERROR),
        (22, Severity.ERROR),
        (26, Severity.ERROR),
    ]
    valid = (
        invalid.replace('"dqn.h5"', '"dqn.weights.h5"')
        .replace('"-best.h5"', '"-best.weights.h5"')
        .replace('"./checkpoints/yolo.tf"', '"./checkpoints/yolo.weights.h5"')
        .replace('default="run/model.tf"', "required=True")
    )
    assert _findings(valid, "TFP406") == []


# --- TFP206: the loss built in another method than the model -------------------------------------


def test_from_logits_loss_made_in_init_or_a_helper_and_the_softmax_model_in_a_factory_method():
    invalid = """
        import keras
        import tensorflow as tf

        class Actor:
            def __init__(self, action_dim):
                self.model = self.create_model(action_dim)
                self.loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

            def create_model(self, action_dim):
                return keras.Sequential([keras.layers.Dense(16, activation="relu"),
                                         keras.layers.Dense(action_dim, activation="softmax")])

            def compute_loss(self, actions, logits):
                ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
                return ce(actions, logits)

            def train(self, states, actions):
                with tf.GradientTape() as tape:
                    probs = self.model(states, training=True)
                    loss = self.compute_loss(actions, probs) + self.loss_fn(actions, self.model(states))
                return tape.gradient(loss, self.model.trainable_variables)

        class Critic:
            def compute_loss(self, values, targets):
                return keras.losses.MeanSquaredError()(targets, values)

            def train(self, states, targets):
                return self.compute_loss(self.model(states), targets)
    """
    assert _findings(invalid, "TFP206") == [(8, Severity.ERROR), (15, Severity.ERROR)]
    # the same code with a logits head; and a helper whose callers pass logits from another model
    valid = invalid.replace('keras.layers.Dense(action_dim, activation="softmax")', "keras.layers.Dense(action_dim)")
    assert _findings(valid, "TFP206") == []
    mixed = invalid.replace(
        "return self.compute_loss(self.model(states), targets)",
        "return Actor.compute_loss(self, None, self.model(states))",
    ).replace(
        "loss = self.compute_loss(actions, probs) + ",
        "logits = self.head(states)\n                    loss = self.compute_loss(actions, logits) + 0 * self.compute_loss(actions, probs) + ",
    )
    assert [line for line, _ in _findings(mixed, "TFP206")] == [8]
