"""`tfpilot migrate` with TensorFlow's real tf_upgrade_v2, and the linter's claims checked
against the installed TensorFlow and Keras (API tables, errors the rules predict)."""

from __future__ import annotations

import ast
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tfpilot.cli.main import main
from tfpilot.errors import LintError
from tfpilot.lint import apis
from tfpilot.migrate import migrate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lint"
MIGRATE_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "migrate"


def resolve(path: str):
    """Import-or-getattr a dotted path; None when any part is missing."""
    parts = path.split(".")
    obj = importlib.import_module(parts[0])
    for part in parts[1:]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(f"{obj.__name__}.{part}")
            except (ImportError, AttributeError):
                return None
    return obj


@pytest.fixture(scope="module")
def tf1_tree(tmp_path_factory):
    source = tmp_path_factory.mktemp("migrate") / "legacy"
    (source / "models").mkdir(parents=True)
    for script in (FIXTURES / "tf1").glob("*.py"):
        shutil.copy(script, source / "models" / script.name)
    shutil.copy(FIXTURES / "tf2" / "keras2_leftovers.py", source / "keras2_leftovers.py")
    (source / "README.txt").write_text("data notes\n")
    return source


def test_migrate_tree_rewrites_fixes_and_reports(tf1_tree, capsys, monkeypatch):
    destination = tf1_tree.parent / "migrated"
    monkeypatch.chdir(tf1_tree.parent)
    with pytest.raises(SystemExit) as exited:
        main(["migrate", str(tf1_tree), str(destination)])
    assert exited.value.code == 0  # every file is expected to run (sessions and queues on tf.compat.v1)
    assert "4 of 4 expected to run" in capsys.readouterr().out
    assert (destination / "README.txt").read_text() == "data notes\n"
    migrated = {path.relative_to(destination).as_posix(): path.read_text() for path in destination.rglob("*.py")}
    assert set(migrated) == {
        "keras2_leftovers.py",
        "models/mnist_session_training.py",
        "models/tfrecord_queue_input.py",
        "models/multi_gpu_batch_norm.py",
        "models/tf1_compat_shims.py",  # the helpers, once for the folder whose files import them
    }
    assert "class _tf1_layers" in migrated.pop("models/tf1_compat_shims.py")
    for text in migrated.values():
        assert "class _tf1_" not in text

        ast.parse(text)
    mnist = migrated["models/mnist_session_training.py"]
    assert "tf.compat.v1.Session()" in mnist and "tf.Session()" not in mnist  # tf_upgrade_v2
    queues = migrated["models/tfrecord_queue_input.py"]
    assert "tf.io.parse_single_example" in queues  # tf_upgrade_v2
    # tf_upgrade_v2 writes TF2's tf.image.resize; in a graph file migrate keeps TF1's sampling (round 16)
    assert "tf.compat.v1.image.resize(" in queues
    keras_code = migrated["keras2_leftovers.py"]
    assert "model.fit(generator" in keras_code and "accuracy.reset_state()" in keras_code  # tfpilot fixes
    assert "learning_rate=1e-3" in keras_code

    report = (destination / "MIGRATION_REPORT.md").read_text()
    assert "## Needs a person" in report and "## Rewritten automatically" in report
    needs_person = report.split("## Needs a person")[1].split("## Notes")[0]
    notes = report.split("## Notes")[1].split("## Kept on tf.compat.v1")[0]
    kept = report.split("## Kept on tf.compat.v1")[1].split("## Rewritten automatically")[0]
    rewritten = report.split("## Rewritten automatically")[1]
    # Keras 3 errors the code would hit need a person; lint advice and tf_upgrade_v2's notes are notes
    assert "| keras2_leftovers.py | 33:5 | error when reached | tfpilot | TFP403 |" in needs_person
    assert "stops the file" not in needs_person
    assert "| TFP505 |" in notes and "| TFP403 |" not in notes
    assert "batch_normalization keeps TF1's behaviour" in notes  # what TFP605 said before the helper
    # compat mode runs sessions, placeholders and queues on tf.compat.v1: a later port, not a blocker;
    # lint notes that once per file (TFP607, naming the TF1 APIs used) instead of per use
    assert "| TFP607 |" in kept and "| TFP607 |" not in needs_person
    for api in ("Session", "placeholder", "start_queue_runners"):
        assert api in kept, api
    assert "| tf_upgrade_v2 | WARNING |" in notes
    assert "Renamed 'tf.Session' to 'tf.compat.v1.Session'" in rewritten
    assert "| tfpilot | TFP504 |" in rewritten and "| tfpilot | TFP501 |" in rewritten
    assert "`contrib_layers.flatten` -> `_tf1_layers.flatten`" in rewritten
    assert "| models/multi_gpu_batch_norm.py | yes |" in report  # its one tf.contrib piece was replaced


def test_migrate_single_file_and_refuses_to_overwrite(tmp_path):
    source = tmp_path / "queue.py"
    shutil.copy(FIXTURES / "tf1" / "tfrecord_queue_input.py", source)
    result = migrate(source, tmp_path / "out" / "queue_v2.py")
    assert result.files == 1 and (tmp_path / "out" / "queue_v2.py").exists()
    assert result.report_path == tmp_path / "out" / "queue_v2.py.migration.md" and result.report_path.exists()
    assert any(item.code == "TFP607" and "start_queue_runners" in item.message for item in result.kept_on_compat)
    with pytest.raises(LintError, match="already exists") as raised:
        migrate(source, tmp_path / "out" / "queue_v2.py")
    assert raised.value.exit_code == 2


def files_table(report: str) -> dict[str, tuple[str, str]]:
    """file -> (expected to run, what stops it), from the report's Files table."""
    rows = {}
    for line in report.split("## Files")[1].split("\n## ")[0].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].endswith(".py"):
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def synthetic_mnist(path: Path) -> Path:
    """MNIST's npz layout with random content; 5,100 train images so TF1's 5,000 validation split fits."""
    import numpy as np

    rng = np.random.default_rng(0)
    np.savez(
        path,
        x_train=rng.integers(0, 256, (5100, 28, 28), dtype=np.uint8),
        y_train=rng.integers(0, 10, 5100, dtype=np.uint8),
        x_test=rng.integers(0, 256, (200, 28, 28), dtype=np.uint8),
        y_test=rng.integers(0, 10, 200, dtype=np.uint8),
    )
    return path


@pytest.mark.slow
def test_compat_output_runs_and_the_report_says_which(tmp_path, capsys):
    """TF1 scripts (tutorial loader, placeholders, Session, tf.layers, tf.contrib.rnn, Saver,
    summaries, a tf.estimator model_fn on the Estimator shim) run on TF 2.21 after migrate."""
    source = tmp_path / "tf1"
    shutil.copytree(
        MIGRATE_FIXTURES, source, ignore=shutil.ignore_patterns("native_*", "estimator_c*.py")
    )  # --mode native and the Estimator programs (test_migrate_estimator.py) have their own tests
    destination = tmp_path / "migrated"
    with pytest.raises(SystemExit) as exited:
        main(["migrate", str(source), str(destination)])  # --mode compat is the default
    assert exited.value.code == 0
    assert "3 of 3 expected to run" in capsys.readouterr().out
    report = (destination / "MIGRATION_REPORT.md").read_text()
    verdicts = files_table(report)
    assert verdicts["mnist_softmax.py"] == ("yes", "") and verdicts["layers_and_cells.py"] == ("yes", "")
    assert verdicts["estimator_leftover.py"] == ("yes", "")
    assert "**MNIST file**" in report and "TFPILOT_MNIST" in report

    mnist = synthetic_mnist(tmp_path / "mnist.npz")
    env = {**os.environ, "TFPILOT_MNIST": str(mnist), "CUDA_VISIBLE_DEVICES": ""}
    for name in ("mnist_softmax.py", "layers_and_cells.py", "estimator_leftover.py"):
        workdir = tmp_path / f"run-{name}"
        workdir.mkdir()
        done = subprocess.run(
            [sys.executable, str(destination / name)], cwd=workdir, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (name, done.stderr[-3000:])
        assert done.stdout.strip().endswith("done"), name
    assert (tmp_path / "run-mnist_softmax.py" / "checkpoints" / "softmax.ckpt.index").exists()
    assert list((tmp_path / "run-layers_and_cells.py" / "logs").glob("events.out.tfevents.*"))


def test_report_marks_a_leftover_removed_api_as_will_not_run(tmp_path):
    source = tmp_path / "leftover.py"
    source.write_text(
        "import tensorflow as tf\nfrom tensorflow.contrib import cudnn_rnn\n\n"
        "x = tf.placeholder(tf.float32, [None, 3])\ny = cudnn_rnn.CudnnLSTM(1, 3)(x)\n"
    )
    result = migrate(source, tmp_path / "out.py")
    (status,) = result.statuses
    assert not status.will_run and result.will_run == 0
    blockers = [item for item in result.needs_person if item.blocks_run]
    assert blockers and all(item.path == "out.py" for item in blockers)
    assert any("tensorflow.contrib" in item.message and "tf.contrib was removed" in item.fix for item in blockers)
    report = result.report_path.read_text()
    assert files_table(report)["out.py"][0] == "no"
    migrated = (tmp_path / "out.py").read_text()
    assert "tf.compat.v1.disable_v2_behavior()" in migrated  # the graph part is handled; cudnn_rnn is not


def test_report_marks_a_slim_member_without_a_helper_as_will_not_run(tmp_path):
    """slim's layer functions, arg_scope and losses are replaced; its repeat is not, and the file is
    reported as one that will not run, naming the call."""
    source = tmp_path / "scoped.py"
    source.write_text(
        "import tensorflow as tf\nimport tensorflow.contrib.slim as slim\n\n"
        "x = tf.placeholder(tf.float32, [None, 3])\n"
        "with slim.arg_scope([slim.fully_connected], activation_fn=None):\n"
        "    y = slim.repeat(x, 2, slim.fully_connected, 4)\n"
    )
    result = migrate(source, tmp_path / "out.py")
    (status,) = result.statuses
    assert not status.will_run
    blockers = [item for item in result.needs_person if item.blocks_run]
    assert [item.line for item in blockers] == [8] and "slim.repeat" in blockers[0].message  # out.py's line
    assert "_tf1_contrib.arg_scope([_tf1_contrib.fully_connected]" in (tmp_path / "out.py").read_text()


def test_migrate_rejects_an_unknown_mode(tmp_path, capsys):
    source = tmp_path / "a.py"
    source.write_text("import tensorflow as tf\n")
    with pytest.raises(SystemExit) as exited:
        main(["migrate", "--mode", "magic", str(source), str(tmp_path / "b.py")])
    assert exited.value.code == 2
    assert "--mode must be one of compat, native, got 'magic'" in capsys.readouterr().err
    assert not (tmp_path / "b.py").exists()


def test_tf1_tables_match_installed_tensorflow():
    tables = [
        apis.TF1_SESSION,
        apis.TF1_PLACEHOLDER,
        apis.TF1_VARIABLE_SCOPE,
        apis.TF1_CHECK_NUMERICS,
        apis.TF1_QUEUES,
        apis.TF1_TRAINING,
        apis.TF1_SAVER_SUMMARY,
        apis.TF1_MODE_SWITCHES,
        apis.TF1_BATCH_NORM,
    ]
    names = sorted({name for table in tables for name in table if not name.startswith("contrib.")})
    # tf.compat.v1.layers needs Keras 2: with Keras 3 its functions raise AttributeError.
    graph_only = [name for name in names if not name.startswith("layers.")]
    missing_in_v1 = [name for name in graph_only if resolve(f"tensorflow.compat.v1.{name}") is None]
    still_in_v2 = [name for name in names if resolve(f"tensorflow.{name}") is not None]
    assert missing_in_v1 == [] and still_in_v2 == []
    assert resolve("tensorflow.compat.v1.layers.batch_normalization") is None


def test_keras_removals_match_installed_keras():
    for entry in apis.KERAS_REMOVED:
        for namespace in entry.namespaces:
            if entry.stub:  # importable, but unusable
                with pytest.raises(ImportError):
                    resolve(f"{namespace}.{entry.path}.Adam")()
                continue
            assert resolve(f"{namespace}.{entry.path}") is None, f"{namespace}.{entry.path} still exists"
        if entry.rename_to is not None:
            assert resolve(f"keras.{entry.rename_to}") is not None, entry.rename_to
    import keras

    for old, new in apis.KERAS_REMOVED_METHODS.items():
        assert not hasattr(keras.Model, old) and hasattr(keras.Model, new)
    assert resolve("keras.layers.Rescaling") is not None  # what layers.experimental.preprocessing.X becomes


def test_the_failures_the_rules_predict_happen(tmp_path):
    import keras
    import tensorflow as tf

    # TFP105: every new Python value traces a new graph; a tensor traces once.
    @tf.function
    def scaled(x, step):
        return x * tf.cast(step, tf.float32)

    for step in range(4):
        scaled(tf.ones(2), step)
    assert scaled.experimental_get_tracing_count() == 4
    for step in range(4):
        scaled(tf.ones(2), tf.constant(step))
    assert scaled.experimental_get_tracing_count() == 5

    # TFP102: .numpy() inside a tf.function fails while tracing.
    @tf.function
    def host(x):
        return x.numpy()

    with pytest.raises(AttributeError):
        host(tf.ones(2))

    # TFP307: cache after shuffle replays the first epoch's order.
    frozen = tf.data.Dataset.range(50).shuffle(50, seed=1).cache()
    assert len({tuple(frozen.as_numpy_iterator()) for _ in range(3)}) == 1
    reshuffled = tf.data.Dataset.range(50).cache().shuffle(50, seed=1)
    assert len({tuple(reshuffled.as_numpy_iterator()) for _ in range(3)}) > 1

    # TFP402 / TFP403 / TFP406 / TFP505 / TFP501: Keras 3 rejects Keras 2 idioms.
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    for call in (
        lambda: model.save(str(tmp_path / "m"), save_format="tf"),
        lambda: model.save(str(tmp_path / "saved_model_dir")),
        lambda: model.save_weights(str(tmp_path / "ckpt")),
        lambda: keras.optimizers.Adam(lr=0.1),
    ):
        with pytest.raises(ValueError):
            call()
    assert not hasattr(keras.metrics.Accuracy(), "reset_states") and not hasattr(model, "reset_states")
