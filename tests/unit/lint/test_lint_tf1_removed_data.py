"""TFP614's table against the installed TensorFlow: every listed TF1 name really raises
AttributeError under ``import tensorflow as tf``, every suggested replacement resolves, and the
committed table is what ``python -m tfpilot.lint.tf1_names --regenerate`` writes today."""

from __future__ import annotations

import pytest
import tensorflow as tf

from tfpilot.lint import tf1_names
from tfpilot.lint.engine import lint_source
from tfpilot.lint.tf1_names import REMOVED, REMOVED_DATASET_METHODS


def _lookup(root: object, dotted: str) -> object:
    value = root
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def test_every_listed_name_is_absent_from_tf():
    present = []
    for name in REMOVED:
        try:
            _lookup(tf, name)
        except AttributeError:
            continue
        present.append(name)
    assert present == []
    assert len(REMOVED) > 300  # the upgrade tables, not a hand list


def test_every_suggested_replacement_resolves():
    unresolved = []
    for name, new in REMOVED.items():
        if new is None:
            continue
        try:
            _lookup(tf, new.split("(")[0])
        except AttributeError:
            unresolved.append(name)
    assert unresolved == []
    for method, new in REMOVED_DATASET_METHODS.items():
        assert not hasattr(tf.data.Dataset, method)
        assert hasattr(tf.compat.v1.data.Dataset, method)  # why compat.v1 files are left alone
        _lookup(tf, new)


@pytest.mark.parametrize(
    "name,new",
    [
        ("truncated_normal", "random.truncated_normal"),
        ("gfile.Exists", "io.gfile.exists"),
        ("log", "math.log"),
        ("train.limit_epochs", "compat.v1.train.limit_epochs"),
        ("to_float", "cast(x, tf.float32)"),
    ],
)
def test_known_entries(name, new):
    assert REMOVED[name] == new


def test_committed_table_matches_the_installed_tensorflow():
    removed, dataset_methods, in_compat_v2 = tf1_names._table()
    assert removed == REMOVED
    assert dataset_methods == REMOVED_DATASET_METHODS
    assert in_compat_v2 == tf1_names.IN_COMPAT_V2
    assert "enable_v2_behavior" in in_compat_v2


def test_a_reported_name_fails_and_its_fix_runs():
    source = "import tensorflow as tf\nx = tf.truncated_normal([2])\n"
    [finding] = [f for f in lint_source(source) if f.code == "TFP614"]
    assert "tf.random.truncated_normal" in finding.message
    with pytest.raises(AttributeError):
        exec(source, {})  # noqa: S102 - the fixture above, on the real TensorFlow
    assert tf.random.truncated_normal([2]).shape == (2,)


def test_every_listed_keyword_is_refused_and_every_new_name_is_taken():
    import inspect

    from tfpilot.lint.tf1_names import REMOVED_KEYWORDS

    assert len(REMOVED_KEYWORDS) > 40  # tf_upgrade_v2's keyword table, not a hand list
    for name, keywords in REMOVED_KEYWORDS.items():
        parameters = inspect.signature(_lookup(tf, name)).parameters
        for old, new in keywords.items():
            assert old not in parameters, (name, old)
            assert new is None or new in parameters, (name, new)
    with pytest.raises(TypeError):
        tf.reduce_sum(tf.ones([2, 3]), axis=1, keep_dims=True)
    tf.compat.v1.reduce_sum(tf.ones([2, 3]), axis=1, keep_dims=True)  # why compat.v1 calls are left alone


def test_a_tf1_keyword_is_reported_on_the_tf2_function_only():
    source = (
        "import tensorflow as tf\n"
        "x = tf.ones([2, 3])\n"
        "a = tf.reduce_sum(x, axis=1, keep_dims=True)\n"
        "b = tf.argmax(x, dimension=1)\n"
        "c = tf.compat.v1.reduce_sum(x, keep_dims=True)\n"
        "d = tf.reduce_sum(x, keepdims=True)\n"
    )
    found = [f for f in lint_source(source, path="case.py") if f.code == "TFP614"]
    assert [int(f.location.split(":")[-2]) for f in found] == [3, 4]
    assert "keepdims=" in found[0].message and "axis=" in found[1].message
