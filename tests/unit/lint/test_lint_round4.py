"""The classes that held-out round 4 showed missed or wrongly reported (issue 30 part 5), each
with a VALID case (what the rule must leave alone, or keep a note) and an INVALID one (what it
must report, where). Written for tfpilot; no outside code is copied here."""

from __future__ import annotations

import textwrap

from tfpilot.findings import Severity
from tfpilot.lint.earned import rule_severity
from tfpilot.lint.engine import lint_source


def _findings(source: str, code: str, path: str = "case.py") -> list[tuple[int, Severity]]:
    found = lint_source(textwrap.dedent(source), path=path)
    return [(int(f.location.split(":")[-2]), rule_severity(f)) for f in found if f.code == code]


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


# --- TFP404: a model built by a factory function of another module of the project --------------


def test_saved_model_save_of_a_model_from_a_project_factory(tmp_path):
    (tmp_path / "models.py").write_text(
        textwrap.dedent(
            """
            import tensorflow as tf
            from tensorflow.keras import Model
            from tensorflow.keras.layers import Dense, Input

            def build_detector(classes=80):
                inputs = Input((416, 416, 3))
                outputs = Dense(classes)(inputs)
                return Model(inputs, outputs, name="detector")

            class Scaler(tf.Module):
                @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
                def __call__(self, x):
                    return 2.0 * x

            def build_scaler():
                return Scaler()
            """
        )
    )
    export = """
        import tensorflow as tf
        from models import build_detector, build_scaler

        def main(tiny):
            if tiny:
                detector = build_detector(classes=20)
            else:
                detector = build_detector()
            tf.saved_model.save(detector, "serving/1")
            scaler = build_scaler()
            tf.saved_model.save(scaler, "scaler/1")
    """
    path = tmp_path / "export.py"
    path.write_text(textwrap.dedent(export))
    assert _findings(path.read_text(), "TFP404", path=str(path)) == [(10, Severity.ERROR)]


# --- TFP504: Keras 2 APIs that Keras 3 removed (premises run in test_lint_tf_premises.py) ------


def test_removed_layer_node_methods_and_fit_worker_arguments():
    invalid = """
        import keras

        def freeze_like(model, other):
            shape = model.layers[0].get_input_shape_at(0)
            out = other.get_output_shape_at(0)
            model.fit(train_sequence, epochs=3, use_multiprocessing=True, workers=4)
            model.evaluate(test_sequence, max_queue_size=10)
            model.predict(x, workers=2)
    """
    assert [line for line, _ in _findings(invalid, "TFP504")] == [5, 6, 7, 8, 9]
    valid = """
        import keras

        def freeze_like(model, other):
            shape = model.layers[0].input.shape
            out = other.output.shape
            sequence = MySequence(workers=4, use_multiprocessing=True)
            model.fit(sequence, epochs=3)
    """
    assert _findings(valid, "TFP504") == []


def test_load_weights_result_used_as_a_checkpoint_status_or_rebinding_the_model():
    invalid = """
        import keras

        model = keras.Sequential([keras.layers.Dense(1)])
        model.load_weights("ckpt/model.weights.h5").expect_partial()
        vae = keras.Sequential([keras.layers.Dense(2)])
        vae = vae.load_weights("vae.weights.h5")
    """
    assert [line for line, _ in _findings(invalid, "TFP504")] == [5, 7]
    valid = """
        import keras
        import tensorflow as tf

        model = keras.Sequential([keras.layers.Dense(1)])
        model.load_weights("ckpt/model.weights.h5")
        checkpoint = tf.train.Checkpoint(model=model)
        checkpoint.restore("ckpt/ckpt-1").expect_partial()
        status = checkpoint.read("ckpt/ckpt-1")
    """
    assert _findings(valid, "TFP504") == []


def test_tensorflow_ops_and_add_loss_on_keras_tensors_of_a_functional_model():
    invalid = """
        from tensorflow.keras import backend as K
        from tensorflow.keras.layers import Dense, Input
        from tensorflow.keras.losses import mse
        from tensorflow.keras.models import Model

        inputs = Input(shape=(784,))
        hidden = Dense(64, activation="relu")(inputs)
        z_mean = Dense(2)(hidden)
        z_log_var = Dense(2)(hidden)
        decoder = Model(inputs, Dense(784)(z_mean))
        outputs = decoder(inputs)
        vae = Model(inputs, outputs)
        reconstruction = mse(inputs, outputs)
        reconstruction *= 784
        kl = 1 + z_log_var - K.square(z_mean) - K.exp(z_log_var)
        kl = K.sum(kl, axis=-1) * -0.5
        vae.add_loss(K.mean(reconstruction + kl))
    """
    found = lint_source(textwrap.dedent(invalid), path="case.py")
    messages = [(int(f.location.split(":")[-2]), f.message) for f in found if f.code == "TFP504"]
    # one finding for the TensorFlow ops (the first stops the script; the message counts the rest)
    assert [line for line, _ in messages] == [16, 18]
    assert "K.square" in messages[0][1] and "(and 3 more in this file)" in messages[0][1]
    assert "add_loss" in messages[1][1]
    # keras.ops on KerasTensors is Keras 3's way; backend ops inside a Lambda's function see real tensors
    valid = """
        import keras
        from tensorflow.keras import backend as K
        from tensorflow.keras.layers import Dense, Input, Lambda

        def sampling(args):
            z_mean, z_log_var = args
            epsilon = K.random_normal(shape=(K.shape(z_mean)[0], 2))
            return z_mean + K.exp(0.5 * z_log_var) * epsilon

        inputs = Input(shape=(784,))
        z_mean = Dense(2)(inputs)
        z_log_var = Dense(2)(inputs)
        z = Lambda(sampling)([z_mean, z_log_var])
        kl = 1 + z_log_var - keras.ops.square(z_mean) - keras.ops.exp(z_log_var)
        z_mean = K.ones_like(real_batch)
        value = K.square(z_mean)
    """
    assert _findings(valid, "TFP504") == []


# --- TFP508: the Keras 2 GAN recipe freezes the discriminator for good in Keras 3 ----------------


def test_discriminator_frozen_after_compile_before_its_first_train_on_batch():
    invalid = """
        import keras

        def build_and_train(generator, discriminator, noise, batches):
            discriminator.compile(loss="binary_crossentropy", optimizer="rmsprop")
            discriminator.trainable = False
            adversarial = keras.Model(noise, discriminator(generator(noise)))
            adversarial.compile(loss="binary_crossentropy", optimizer="rmsprop")
            for x, y in batches:
                discriminator.train_on_batch(x, y)
                adversarial.train_on_batch(x, y)
    """
    assert _findings(invalid, "TFP508") == [(6, Severity.WARNING)]
    # toggled by hand around each step, or never trained on its own (a frozen feature extractor)
    toggled = invalid.replace(
        "discriminator.train_on_batch(x, y)",
        "discriminator.trainable = True\n                discriminator.train_on_batch(x, y)\n"
        "                discriminator.trainable = False",
    )
    assert _findings(toggled, "TFP508") == []
    # (unfrozen for its own step and never frozen again: Keras 3's adversarial steps train it too)
    half_toggled = invalid.replace(
        "discriminator.train_on_batch(x, y)",
        "discriminator.trainable = True\n                discriminator.train_on_batch(x, y)",
    )
    assert _findings(half_toggled, "TFP508") == [(10, Severity.WARNING)]
    extractor = """
        import keras

        base = keras.applications.MobileNetV2(include_top=False)
        base.compile(loss="mse")
        base.trainable = False
        model = keras.Sequential([base, keras.layers.Dense(1)])
        model.compile(loss="mse")
        model.fit(x, y)
    """
    assert _findings(extractor, "TFP508") == []
    # in a file that runs on Keras 2 the recipe works: a note
    keras2 = "import tf_keras as keras\n" + textwrap.dedent(invalid).replace("import keras\n", "")
    assert [severity for _, severity in _findings(keras2, "TFP508")] == [Severity.INFO]


# --- TFP201: models built by factory methods, judged by their own layers ------------------------


def test_models_of_factory_methods_without_training_dependent_layers_are_notes():
    source = """
        import tensorflow as tf
        from tensorflow.keras.layers import Dense, Dropout, Input, Lambda, concatenate

        class Actor:
            def __init__(self, state_dim, bound):
                self.bound = bound
                self.model = self.create_model(state_dim)

            def create_model(self, state_dim):
                return tf.keras.Sequential([Input((state_dim,)), Dense(32, activation="relu"),
                                            Dense(1, activation="tanh"), Lambda(lambda x: x * self.bound)])

            def train(self, states, q_grads):
                with tf.GradientTape() as tape:
                    grads = tape.gradient(self.model(states), self.model.trainable_variables, -q_grads)
                self.opt.apply_gradients(zip(grads, self.model.trainable_variables))

        class Critic:
            def __init__(self, state_dim):
                self.model = self.create_model(state_dim)

            def create_model(self, state_dim):
                state_input = Input((state_dim,))
                action_input = Input((1,))
                merged = concatenate([Dense(16)(state_input), Dense(16)(action_input)], axis=-1)
                return tf.keras.Model([state_input, action_input], Dense(1)(merged))

            def q_grads(self, states, actions):
                with tf.GradientTape() as tape:
                    tape.watch(actions)
                    q_values = self.model([states, actions])
                return tape.gradient(q_values, actions)

        class Policy:
            def __init__(self, state_dim):
                self.model = self.create_model(state_dim)

            def create_model(self, state_dim):
                return tf.keras.Sequential([Input((state_dim,)), Dense(32), Dropout(0.5), Dense(2)])

            def train(self, states):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(self.model(states))
                return tape.gradient(loss, self.model.trainable_variables)
    """
    # the actor (Dense + Lambda) is a note; the critic's tape differentiates the watched actions
    # only, so no model trains there and nothing is reported (round 6); the policy, whose Dropout
    # does depend on training=, keeps the warning
    assert _findings(source, "TFP201") == [(16, Severity.INFO), (44, Severity.WARNING)]


def test_save_weights_path_unpacked_from_a_helper_and_the_projects_own_save_weights_method():
    invalid = """
        import os
        import keras

        class Agent:
            def save_weights(self, actor_path, critic_path):
                self.actor.save_weights(actor_path)
                self.critic.save_weights(critic_path)

        class A2CAgent(Agent):
            pass

        def setup_files(run_id):
            actor_path = os.path.join("runs", "actor-%s.h5" % run_id)
            critic_path = os.path.join("runs", "critic-%s.weights.h5" % run_id)
            paths = (actor_path, critic_path)
            return paths, run_id

        def make_agent():
            agent = A2CAgent()
            return agent, 3

        if __name__ == "__main__":
            paths, run_id = setup_files(7)
            actor_path, critic_path = paths
            agent, steps = make_agent()
            agent.save_weights(actor_path, critic_path)
    """
    # reported in the method, at the Keras call; the critic's name is right; the agent's own
    # save_weights is no Keras call
    assert _findings(invalid, "TFP406") == [(7, Severity.ERROR)]
    valid = invalid.replace('"actor-%s.h5"', '"actor-%s.weights.h5"')
    assert _findings(valid, "TFP406") == []
