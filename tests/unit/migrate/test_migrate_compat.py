"""The compat rewrite on source text: what it inserts, replaces and reports (libcst, no TensorFlow)."""

from __future__ import annotations

import ast

from tfpilot.migrate.compat import SHIM_MODULE, SHIMS_VERSION, render_shim_module, rewrite_compat

GRAPH_SCRIPT = '''"""Docstring."""
from __future__ import print_function

import numpy as np
import tensorflow as tf
from tensorflow.contrib import rnn
from tensorflow.examples.tutorials.mnist import input_data

mnist = input_data.read_data_sets("data/", one_hot=True)
x = tf.compat.v1.placeholder(tf.float32, [None, 784])
h = tf.compat.v1.layers.dense(x, 10)
cell = rnn.BasicLSTMCell(4)
'''


def lines_of(text: str, needle: str) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), 1) if needle in line]


def test_graph_file_gets_graph_mode_helpers_and_bindings() -> None:
    result = rewrite_compat(GRAPH_SCRIPT)
    out = result.source
    ast.parse(out)
    assert result.graph_mode and result.disabled_v2
    assert result.helpers == ("_tf1_layers", "_tf1_mnist", "_tf1_rnn")
    # graph mode is switched off right after the TensorFlow import, before any graph code
    disable = lines_of(out, "tf.compat.v1.disable_v2_behavior()")
    assert disable == [lines_of(out, "import tensorflow as tf")[0] + 1]
    # helpers are imported (not pasted) after the docstring and __future__ import, before the file's own imports
    shim = lines_of(out, f"from {SHIM_MODULE} import _tf1_layers, _tf1_mnist, _tf1_rnn")
    assert lines_of(out, "from __future__")[0] < shim[0] < lines_of(out, "import numpy as np")[0]
    assert "class _tf1_layers" not in out and len(out.splitlines()) < len(GRAPH_SCRIPT.splitlines()) + 4
    # imports of removed modules become bindings of the helpers, on their own lines
    assert "tensorflow.contrib" not in out and "tensorflow.examples" not in out
    assert "rnn = _tf1_rnn" in out and "input_data = _tf1_mnist" in out
    assert "h = _tf1_layers.dense(x, 10)" in out and "cell = _tf1_rnn.BasicLSTMCell(4)" in out
    assert "mnist = _tf1_mnist.read_data_sets(" in out


def test_shim_module_is_versioned_and_holds_each_helper_whole() -> None:
    text = render_shim_module(["_tf1_layers", "_tf1_contrib"])
    ast.parse(text)
    assert f"TF1_COMPAT_SHIMS_VERSION = {SHIMS_VERSION}" in text
    assert "class _tf1_layers" in text and "class _tf1_contrib" in text and "class _tf1_rnn" not in text
    assert "def dense(" in text and "def conv2d(" in text and "def batch_normalization(" in text


def test_change_lines_point_at_the_rewritten_code() -> None:
    result = rewrite_compat(GRAPH_SCRIPT)
    out_lines = result.source.splitlines()
    for change in result.changes:
        line = out_lines[change.line - 1]
        if "_tf1_layers.dense" in change.message:
            assert "_tf1_layers.dense(" in line
        if "import of `tensorflow.contrib.rnn`" in change.message:
            assert line == "rnn = _tf1_rnn"
        if "disable_v2_behavior" in change.message:
            assert "disable_v2_behavior()" in line


def test_eager_tf2_code_is_left_alone() -> None:
    source = "import tensorflow as tf\n\nx = tf.constant(1.0)\nprint(tf.reduce_sum(x))\n"
    result = rewrite_compat(source)
    assert result.source == source and not result.changes and not result.graph_mode


def test_existing_disable_call_is_not_duplicated() -> None:
    source = (
        "import tensorflow as tf\ntf.compat.v1.disable_eager_execution()\nx = tf.compat.v1.placeholder(tf.float32)\n"
    )
    result = rewrite_compat(source)
    assert result.graph_mode and not result.disabled_v2
    assert result.source.count("disable_") == 1


def test_compat_v1_alias_import_gets_its_own_spelling() -> None:
    source = "import tensorflow.compat.v1 as tf\nsess = tf.Session()\nx = tf.placeholder(tf.float32)\n"
    assert "tf.disable_v2_behavior()" in rewrite_compat(source).source


def test_tf2_summaries_in_a_graph_file_go_back_to_tf1_ops() -> None:
    source = (
        "import tensorflow as tf\nx = tf.compat.v1.placeholder(tf.float32)\n"
        "tf.summary.scalar('x', x)\ntf.summary.scalar('y', x, step=1)\nmerged = tf.compat.v1.summary.merge_all()\n"
    )
    out = rewrite_compat(source).source
    assert "tf.compat.v1.summary.scalar('x', x)" in out
    assert "tf.summary.scalar('y', x, step=1)" in out  # already TF2: untouched


def test_unsupported_member_of_a_removed_module_is_noted() -> None:
    result = rewrite_compat("import tensorflow as tf\nfrom tensorflow.contrib import rnn\ncell = rnn.NASCell(4)\n")
    # The note is what the report turns into a blocker: the helper has no NASCell either.
    assert [note.line for note in result.notes if "rnn.NASCell" in note.message] == lines_of(
        result.source, "rnn.NASCell(4)"
    )


def test_import_used_only_through_replaced_members_is_dropped() -> None:
    source = (
        "import tensorflow as tf\nfrom tensorflow.contrib import layers as cl\nx = cl.flatten(tf.zeros([2, 3, 4]))\n"
    )
    out = rewrite_compat(source).source
    assert "tensorflow.contrib" not in out and "x = _tf1_layers.flatten(" in out


def test_helper_import_is_reported_on_its_line() -> None:
    result = rewrite_compat("import tensorflow as tf\ny = tf.compat.v1.layers.dense(tf.zeros([1, 2]), 3)\n")
    lines = result.source.splitlines()
    [change] = [c for c in result.changes if c.message.startswith("imports ")]
    assert lines[change.line - 1].startswith(f"from {SHIM_MODULE} import _tf1_layers")


def test_numeric_format_of_a_fetch_reads_the_one_element() -> None:
    source = (
        "import tensorflow as tf\nsess = tf.compat.v1.Session()\nW = tf.Variable([[1.0]])\n"
        'print("W: %f" % sess.run(W))\n'
        'print("%d: %.3f %s" % (3, sess.run(W), sess.run(W)))\n'
        'print("all %s" % sess.run(W))\n'
        'print("%f" % sess.run([W]))\n'
    )
    out = rewrite_compat(source).source.splitlines()
    assert 'print("W: %f" % sess.run(W).item())' in out
    assert 'print("%d: %.3f %s" % (3, sess.run(W).item(), sess.run(W)))' in out  # %s prints any array
    assert 'print("all %s" % sess.run(W))' in out and 'print("%f" % sess.run([W]))' in out


def test_shim_module_brings_the_helpers_a_helper_calls() -> None:
    text = render_shim_module(["_tf1_contrib"])
    assert "HELPERS = ('_tf1_contrib', '_tf1_layers')" in text and "class _tf1_layers" in text
