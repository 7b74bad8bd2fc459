"""Library frames are decided by install directory, never by a substring of the path."""

import os
import sysconfig

import keras
import tensorflow as tf

from tfpilot.diagnose.frames import is_framework, is_library
from tfpilot.diagnose.watchers import Watcher


def test_installed_packages_and_the_standard_library_are_library_code():
    assert is_library(keras.__file__) and is_framework(keras.__file__)
    assert is_library(tf.__file__) and is_framework(tf.__file__)
    assert is_library(os.path.join(sysconfig.get_paths()["stdlib"], "runpy.py"))
    assert not is_framework(os.path.join(sysconfig.get_paths()["stdlib"], "runpy.py"))
    assert is_library("<frozen importlib._bootstrap>")


def test_user_files_named_after_keras_or_tensorflow_are_user_code(tmp_path):
    for relative in ("keras-examples/sync_keras_demo.py", "tensorflow/train.py", "site/keras/model.py"):
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        assert not is_library(str(path)), relative
        assert not is_framework(str(path)), relative


def _line_of(marker: str) -> str:
    lines = open(__file__).read().splitlines()
    return f"{__file__}:{next(i for i, text in enumerate(lines, 1) if text.endswith(marker))}"


def test_reads_through_keras_are_the_users_and_tensorflows_own_reads_are_not():
    variable = keras.Variable(tf.ones([3]))
    watcher = Watcher(replay_numerics=False).start()
    try:
        variable.numpy()  # read-1
        float(tf.reduce_sum(variable))  # read-2
        x = tf.ones([2, 3])
        with tf.GradientTape() as tape:
            tape.watch(x)
            total = tf.reduce_sum(x, axis=1)
        tape.gradient(total, x)  # the eager gradient reads its axes with .numpy(): TensorFlow's own read
    finally:
        watcher.stop()
    locations = [key for kind, _, _, key, *_ in watcher.events if kind == "sync"]
    assert locations == [_line_of("# read-1"), _line_of("# read-2")]
