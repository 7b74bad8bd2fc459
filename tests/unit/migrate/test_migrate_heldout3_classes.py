"""Two classes from held-out round 3: removed contrib modules reached as `tf.contrib....` attribute
chains, and absl flags whose default is a NumPy number. Each snippet is migrated and run on TF 2.21."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tfpilot.migrate.compat import rewrite_compat

CHAINS = """import numpy as np
import tensorflow as tf

emb = tf.Variable(np.ones((3, 2), np.float32), name='emb')
config = tf.contrib.tensorboard.plugins.projector.ProjectorConfig()
entry = config.embeddings.add()
entry.tensor_name = emb.name
writer = tf.summary.FileWriter('logs')
tf.contrib.tensorboard.plugins.projector.visualize_embeddings(writer, config)
print(sorted(open('logs/projector_config.pbtxt').read().split()))
"""

FLAGS_SCRIPT = """import numpy as np
import tensorflow as tf

tf.app.flags.DEFINE_integer('batch_size', np.power(2, 7), 'Batch size.')
flags = tf.flags
flags.DEFINE_float(
    'rate', np.float32(0.25), 'A rate.')
flags.DEFINE_integer('steps', 3, 'Steps.')
FLAGS = tf.app.flags.FLAGS
print(FLAGS.batch_size, type(FLAGS.batch_size).__name__, FLAGS.rate, FLAGS.steps)
"""


def migrated(tmp_path: Path, name: str, source: str) -> Path:
    from tfpilot.migrate.command import migrate

    (tmp_path / "tf1").mkdir()
    (tmp_path / "tf1" / name).write_text(source, encoding="utf-8")
    report = migrate(tmp_path / "tf1", tmp_path / "tf2")
    assert report.will_run == report.files, report.statuses
    return tmp_path / "tf2" / name


def run(script: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=script.parent.parent,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_contrib_attribute_chains_go_where_their_imports_go() -> None:
    source = (
        "import tensorflow as tf\n"
        "config = tf.contrib.tensorboard.plugins.projector.ProjectorConfig()\n"
        "data = tf.contrib.learn.datasets.mnist.read_data_sets('data', one_hot=True)\n"
        "cells = tf.contrib.rnn\n"
        "projector = 'a name of the file'\n"
    )
    result = rewrite_compat(source)
    out = result.source
    assert "tf.contrib" not in out
    # `projector` is the file's own name here, so the TF 2.21 home is bound under another one
    assert "from tensorboard.plugins import projector as _tf1_projector  # tfpilot migrate" in out
    assert "config = _tf1_projector.ProjectorConfig()" in out
    assert "data = _tf1_mnist.read_data_sets('data', one_hot=True)" in out and "cells = _tf1_rnn" in out
    lines = out.splitlines()
    for change in result.changes:
        if "tensorboard" in change.message:
            assert "projector" in lines[change.line - 1]


@pytest.mark.slow
def test_projector_through_the_attribute_chain_runs(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    script = migrated(tmp_path, "embeddings.py", CHAINS)
    text = script.read_text(encoding="utf-8")
    assert "tf.contrib" not in text and "from tensorboard.plugins import projector" in text
    assert "projector.visualize_embeddings(writer, config)" in text
    assert run(script) == str(sorted(["embeddings", "{", "tensor_name:", '"emb:0"', "}"]))


def test_flag_defaults_that_are_not_literals_are_cast() -> None:
    result = rewrite_compat(FLAGS_SCRIPT)
    out = result.source
    assert "DEFINE_integer('batch_size', int(np.power(2, 7)), 'Batch size.')  # tfpilot migrate: int()" in out
    assert "'rate', float(np.float32(0.25)), 'A rate.')  # tfpilot migrate: float()" in out
    assert "flags.DEFINE_integer('steps', 3, 'Steps.')\n" in out  # a literal is left alone
    assert rewrite_compat(out).source == out  # already cast: left alone
    casts = [change for change in result.changes if "the default of DEFINE_" in change.message]
    assert [out.splitlines()[change.line - 1].count("np.") for change in casts] == [1, 1]


@pytest.mark.slow
def test_numpy_flag_defaults_run_after_migration(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow")
    from absl import flags

    # The premise, on the absl installed here: a NumPy default stops the definition.
    with pytest.raises(flags.IllegalFlagValueError, match="numpy.int64"):
        flags.DEFINE_integer("batch_size", np.power(2, 7), "help", flag_values=flags.FlagValues())
    with pytest.raises(flags.IllegalFlagValueError, match="numpy.float32"):
        flags.DEFINE_float("rate", np.float32(0.25), "help", flag_values=flags.FlagValues())
    script = migrated(tmp_path, "train.py", FLAGS_SCRIPT)
    assert run(script) == "128 int 0.25 3"
    assert run(script, "--batch_size=5") == "5 int 0.25 3"  # the flag still parses its command line
