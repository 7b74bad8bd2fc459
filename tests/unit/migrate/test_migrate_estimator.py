"""tf.estimator (removed in TF 2.16) after ``tfpilot migrate``: the migrated programs RUN on TF 2.21.

The fixtures are TF1 Estimator programs written for these tests (tests/fixtures/migrate/
estimator_*.py). Each goes through the whole command (tf_upgrade_v2, the compat pass, the shim
module) and then runs in its own Python process; what it prints and writes (checkpoints,
SavedModels) is checked here, and the SavedModels are served with ``tf.saved_model.load``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from tfpilot.migrate.command import migrate, render_markdown  # noqa: E402
from tfpilot.migrate.compat import ESTIMATOR_COVERAGE, HELPER_NAMES, SHIMS_VERSION, render_shim_module  # noqa: E402
from tfpilot.migrate.readiness import check_runs  # noqa: E402

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "migrate"


def run(script: Path, *arguments: str | Path, cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(script), *map(str, arguments)],
        cwd=cwd,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [line.split(" ", 1) for line in done.stdout.splitlines() if line[:1].isupper() and " " in line]
    return {tag: json.loads(value) for tag, value in lines}


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("estimator")
    source = root / "tf1"
    source.mkdir()
    for name in ("estimator_custom.py", "estimator_canned.py"):
        (source / name).write_text((FIXTURES / name).read_text(encoding="utf-8"), encoding="utf-8")
    report = migrate(source, root / "tf2")
    assert report.will_run == report.files, [status for status in report.statuses if not status.will_run]
    (root / "run").mkdir()
    return root


def test_custom_model_fn_trains_resumes_evaluates_predicts_and_exports(migrated: Path) -> None:
    script = migrated / "tf2" / "estimator_custom.py"
    text = script.read_text(encoding="utf-8")
    assert "tf.estimator" not in text and "_tf1_estimator.EstimatorSpec" in text
    model, exports = migrated / "run" / "model", migrated / "run" / "exports"
    first = run(script, model, exports, cwd=migrated / "run")
    second = run(script, model, exports, cwd=migrated / "run")  # a new process resumes from model_dir

    # per run: two train(steps=20) calls, then train() with no steps (one pass over 3 batches of 100)
    assert first["EVAL"]["global_step"] == 43 and second["EVAL"]["global_step"] == 86  # type: ignore[index]
    assert second["EVAL"]["loss"] < first["EVAL"]["loss"]  # type: ignore[index]
    assert set(first["EVAL"]) == {"accuracy", "loss", "global_step"}  # type: ignore[arg-type]
    assert second["EVAL"]["accuracy"] > 0.8  # type: ignore[index]
    assert tf.train.latest_checkpoint(str(model)).endswith("model.ckpt-86")
    assert len(list(model.glob("model.ckpt-*.index"))) == 5  # RunConfig's keep_checkpoint_max

    predictions = second["PREDICT"]
    assert isinstance(predictions, list) and len(predictions) == 5  # one dict per example, batches of 2
    assert all(set(p) == {"classes", "probabilities"} and abs(sum(p["probabilities"]) - 1) < 1e-5 for p in predictions)

    loaded = tf.saved_model.load(second["EXPORT"])
    assert set(loaded.signatures) == {"scores", "serving_default"}  # one export output is also the default
    x = np.random.RandomState(0).rand(300, 4).astype(np.float32)[:5]  # the fixture's first five rows
    served = loaded.signatures["serving_default"](x=tf.constant(x))
    assert served["classes"].numpy().tolist() == [p["classes"] for p in predictions]
    np.testing.assert_allclose(served["probabilities"].numpy(), [p["probabilities"] for p in predictions], atol=1e-5)


def test_canned_estimators_on_feature_columns_with_train_and_evaluate(migrated: Path) -> None:
    out = run(migrated / "tf2" / "estimator_canned.py", migrated / "run" / "canned", cwd=migrated / "run")
    dnn, linear, regressor = out["DNN"], out["LINEAR"], out["REGRESSOR"]
    assert isinstance(dnn, dict) and isinstance(linear, dict) and isinstance(regressor, dict)
    assert dnn["global_step"] == 300 and dnn["accuracy"] > 0.9 and dnn["auc"] > 0.9
    assert {"average_loss", "loss", "precision", "recall", "label/mean", "prediction/mean"} <= set(dnn)
    assert linear["global_step"] == 200 and linear["accuracy"] > 0.9
    assert regressor["global_step"] == 300 and regressor["average_loss"] < 0.01
    assert out["KEYS"] == [
        "all_class_ids", "all_classes", "class_ids", "classes", "logistic", "logits", "probabilities"
    ]  # fmt: skip

    # the FinalExporter wrote a tf.Example SavedModel at the end of train_and_evaluate
    (path,) = out["EXPORTS"]  # type: ignore[misc]
    assert Path(path).parent == migrated / "run" / "canned" / "dnn" / "export" / "final"
    loaded = tf.saved_model.load(path)
    assert {"serving_default", "classification", "predict"} <= set(loaded.signatures)
    example = tf.train.Example(
        features=tf.train.Features(
            feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[0.9, 0.1])),
                "color": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"blue"])),
                "bucket": tf.train.Feature(int64_list=tf.train.Int64List(value=[1])),
            }
        )
    )
    scores = loaded.signatures["serving_default"](inputs=tf.constant([example.SerializeToString()]))["scores"]
    assert scores.shape == (1, 2) and scores.numpy()[0, 1] > 0.5  # x > 0.5 and not red -> class 1


def test_report_says_what_the_shim_covers_and_refuses(tmp_path: Path) -> None:
    source = tmp_path / "tf1"
    source.mkdir()
    (source / "refused.py").write_text(
        "import tensorflow as tf\n"
        "def model_fn(features, labels, mode):\n"
        "    return tf.estimator.EstimatorSpec(mode, loss=tf.constant(0.0), train_op=tf.no_op())\n"
        "est = tf.estimator.Estimator(model_fn, warm_start_from='old/model.ckpt')\n"
        "trees = tf.estimator.BoostedTreesClassifier([], n_batches_per_layer=1)\n"
        "fn = tf.estimator.inputs.pandas_input_fn(None)\n"
        "dnn = tf.estimator.DNNClassifier([4], [], label_vocabulary=['a', 'b'])\n",
        encoding="utf-8",
    )
    report = migrate(source, tmp_path / "tf2")
    (status,) = report.statuses
    assert not status.will_run
    text = render_markdown(report)
    assert "`Estimator(warm_start_from='old/model.ckpt')`" in text
    assert "tf.estimator.BoostedTreesClassifier" in text and "tf.estimator.inputs.pandas_input_fn" in text
    assert "`DNNClassifier(label_vocabulary=['a', 'b'])`" not in text  # a list is not a literal constant
    assert "Estimator shim does not cover this part" in text
    assert ESTIMATOR_COVERAGE.split(":")[0] in text  # the coverage note, once per file
    migrated_text = (tmp_path / "tf2" / "refused.py").read_text(encoding="utf-8")
    assert "_tf1_estimator.Estimator(" in migrated_text and "tf.estimator.BoostedTreesClassifier" in migrated_text


def test_refused_canned_options_are_blockers() -> None:
    source = (
        "import tensorflow as tf\n"
        "a = _tf1_estimator.DNNClassifier([4], [], weight_column='w')\n"
        "b = _tf1_estimator.DNNRegressor([4], [], batch_norm=True)\n"
        "c = _tf1_estimator.RunConfig(save_checkpoints_steps=10)\n"
        "d = _tf1_estimator.LinearClassifier([], label_vocabulary=None)\n"
    )
    assert [(b.line, b.what.split(":")[0]) for b in check_runs(source)] == [
        (2, "`DNNClassifier(weight_column='w')`"),
        (3, "`DNNRegressor(batch_norm=True)`"),
    ]


def test_shim_module_is_versioned_and_lists_the_estimator_helper() -> None:
    text = render_shim_module(["_tf1_estimator"])
    assert f"TF1_COMPAT_SHIMS_VERSION = {SHIMS_VERSION}" in text and "HELPERS = ('_tf1_estimator',)" in text
    namespace: dict[str, object] = {}
    exec(compile(text, "tf1_compat_shims.py", "exec"), namespace)  # the emitted text is importable on its own
    helper = namespace["_tf1_estimator"]
    assert all(hasattr(helper, member) for member in HELPER_NAMES["_tf1_estimator"][1])


def test_numpy_input_fn_keeps_tf1_batching() -> None:
    from tfpilot.migrate.shims.estimator import _tf1_estimator

    with pytest.raises(ValueError, match="shuffle must be provided"):
        _tf1_estimator.numpy_input_fn({"x": np.zeros(3)})
    dataset = _tf1_estimator.numpy_input_fn({"x": np.arange(5)}, np.arange(5) * 2, batch_size=2, shuffle=False)()
    batches = [(features["x"].numpy().tolist(), labels.numpy().tolist()) for features, labels in dataset]
    assert batches == [([0, 1], [0, 2]), ([2, 3], [4, 6]), ([4], [8])]  # one epoch, a short last batch
    endless = _tf1_estimator.numpy_input_fn({"x": np.arange(3)}, batch_size=2, num_epochs=None, shuffle=False)()
    assert [batch["x"].numpy().tolist() for batch in endless.take(3)] == [[0, 1], [2, 0], [1, 2]]  # spans epochs


def test_native_mode_keeps_an_estimator_program_on_the_shim() -> None:
    from tfpilot.migrate.native import rewrite_native

    source = (FIXTURES / "estimator_leftover.py").read_text(encoding="utf-8")
    result = rewrite_native(source)
    assert not result.converted and result.source == source
    assert (
        result.reason.startswith("a tf.estimator program") and result.reason_line == 13
    )  # the first tf.estimator name in code (the docstring does not count)
