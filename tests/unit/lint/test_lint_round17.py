"""Classes found on held-out lint round 17 (after its figure was taken; now tuning material).

- Keras 2 public names Keras 3 removed, found by reading Keras 2's own API listing (lint/keras2_names.py):
  `from keras.models import model_from_config` stopped every keras-rl2 agent from importing;
- `model.input` / `model.output` of a keras.Sequential raise AttributeError in Keras 3 (keras-rl2's DQN
  checked `model.output.shape` on the user's Sequential);
- `metric.reset_states()` where the project's own Metric subclasses define reset_states (FILM's eval loop):
  the call reaches the project's method, not Keras 2's.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tfpilot.lint.engine import lint_source
from tfpilot.lint.keras2_removed_data import GONE_FROM_KERAS, GONE_FROM_TF_KERAS
from tfpilot.lint.tf1_names import resolves


def _codes(source: str, path: str = "case.py") -> set[tuple[str, int]]:
    return {
        (finding.code, int(finding.location.split(":")[-2]))
        for finding in lint_source(textwrap.dedent(source), path=path)
    }


def test_premise_every_generated_keras2_name_is_gone_and_every_replacementresolves():
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    assert len(GONE_FROM_KERAS) > 100 and "models.model_from_config" in GONE_FROM_KERAS
    for root, table in ((keras, GONE_FROM_KERAS), (tf.keras, GONE_FROM_TF_KERAS)):
        assert [name for name in table if resolves(root, name)] == []
        assert [new for new in table.values() if new is not None and not resolves(root, new)] == []
    # tf.keras keeps Keras 2's loss aliases; the standalone keras does not
    assert "losses.mse" in GONE_FROM_KERAS and "losses.mse" not in GONE_FROM_TF_KERAS


def test_removed_keras2_names_are_reported_where_they_are_gone_and_mechanical_renames_are_fixable():
    source = """
    import keras
    import tensorflow as tf
    from keras.models import model_from_config
    from keras.utils import OrderedEnqueuer
    loss = keras.losses.mse([1.0], [2.0])
    kept = tf.keras.losses.mse([1.0], [2.0])
    metric = keras.metrics.MeanTensor()
    cell = tf.keras.layers.AbstractRNNCell
    """
    found = lint_source(textwrap.dedent(source), path="case.py")
    lines = {int(f.location.split(":")[-2]): f for f in found if f.code == "TFP504"}
    assert sorted(lines) == [4, 5, 6, 8, 9]
    assert "`keras.losses.mean_squared_error`" in lines[6].message
    assert "deserialize_keras_object" in lines[4].message
    assert lines[6].fix is not None


def test_premise_a_keras3_sequential_has_no_input_or_output_until_called():
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    for name in ("input", "output"):
        with pytest.raises(AttributeError, match="never been called"):
            getattr(model, name)
    assert model.inputs[0].shape == (None, 4) and model.outputs[0].shape == (None, 2)
    model(keras.Input((4,)))
    assert model.output.shape == (None, 2)


def test_sequential_input_and_output_are_reported_unless_the_model_is_called():
    source = """
    import keras
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    features = keras.Model(inputs=model.input, outputs=model.layers[0].output)
    print(model.output.shape)
    inputs = keras.Input((4,))
    functional = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    print(functional.output, functional.input)
    """
    assert {line for code, line in _codes(source) if code == "TFP504"} == {4, 5}
    called = source + "    out = model(keras.Input((4,)))\n"
    assert {line for code, line in _codes(called) if code == "TFP504"} == set()


def test_reset_states_on_an_unknown_receiver_is_left_alone_where_the_projects_own_classes_define_it(tmp_path):
    (tmp_path / "metrics_lib.py").write_text(
        "import tensorflow as tf\n\n\nclass L1Metric(tf.keras.metrics.Metric):\n"
        "    def reset_states(self):\n        self.total.assign(0.0)\n"
    )
    loop = "import tensorflow as tf\n\n\ndef evaluate(metrics):\n    for metric in metrics.values():\n        metric.reset_states()\n"
    evaluation = tmp_path / "eval_lib.py"
    evaluation.write_text(loop)
    assert ("TFP501", 6) not in _codes(loop, path=str(evaluation))
    # a Keras metric made in the file is still a Keras metric
    proven = "import tensorflow as tf\n\nacc = tf.keras.metrics.Mean()\nacc.reset_states()\n"
    assert ("TFP501", 4) in _codes(proven, path=str(evaluation))
    # without the project's own method the loop over `metrics` is Keras metrics
    lone = tmp_path / "alone"
    lone.mkdir()
    (lone / "eval_lib.py").write_text(loop)
    assert ("TFP501", 6) in _codes(loop, path=str(Path(lone / "eval_lib.py")))


PYRAMID = """
import tensorflow as tf


class SubTree(tf.keras.layers.Layer):
    def call(self, image, n):
        return image


class Pyramid(tf.keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.extract = SubTree()

    def call(self, pyramid):
        out = []
        for i in range(len(pyramid)):
            capped = min(len(pyramid) - i, self.levels)
            out.append(self.extract(pyramid[i], capped))
            out.append(self.extract(pyramid[i], len(pyramid)))
            scale = tf.reduce_mean(pyramid[i])
            out.append(self.extract(pyramid[i], scale))
            out.append(self.extract(pyramid[i], tf.shape(pyramid[i])[0] - 1))
        return out
"""


def test_a_python_number_computed_in_the_call_is_refused_positionally_by_a_keras_layer():
    """FILM: `capped = min(len(pyramid) - i, levels)` passed positionally to the project's layer: Keras 3 raises
    ValueError (only tensors positionally); tensors computed in the loop are left alone."""
    assert {line for code, line in _codes(PYRAMID) if code == "TFP507"} == {19, 20}


def test_premise_the_hand_written_hints_for_generated_names_cite_keras3_names_that_exist():
    import re

    keras = pytest.importorskip("keras")
    from tfpilot.lint.apis import GENERATED_HINTS

    assert set(GENERATED_HINTS) <= set(GONE_FROM_KERAS)
    cited = {name for hint in GENERATED_HINTS.values() for name in re.findall(r"`keras\.([\w.]+)", hint)}
    assert cited and [name for name in sorted(cited) if not resolves(keras, name)] == []
