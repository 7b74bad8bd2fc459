"""The migration report is honest: what needs a person, what is only a note, missing files, the
exit code, and --verify's record of what happened when each migrated script ran."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from tfpilot.cli.main import main  # noqa: E402
from tfpilot.migrate.command import entry_scripts, migrate  # noqa: E402
from tfpilot.migrate.readiness import check_runs  # noqa: E402

GRAPH_SCRIPT = (
    "import tensorflow as tf\nx = tf.placeholder(tf.float32, [None])\ny = tf.reduce_sum(x * 2.0)\n"
    "with tf.Session() as sess:\n    print('SUM', sess.run(y, feed_dict={x: [1.0, 2.0]}))\n"
)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_a_missing_local_module_is_named_as_a_file_not_a_package(tmp_path: Path) -> None:
    [blocker] = check_runs("import fake_mnist\n", nearby_modules={"fake_mnist": "/src/fake_mnist.py"})
    assert "`/src/fake_mnist.py` was not part of SRC" in blocker.what and "pip" not in blocker.fix
    [unknown] = check_runs("import no_such_module_xyz\n")
    assert "neither a file in SRC" in unknown.what and "add no_such_module_xyz.py to SRC" in unknown.fix
    assert "pip install" not in unknown.fix


def test_single_file_sibling_module_is_reported_as_missing_file(tmp_path: Path) -> None:
    source = write(tmp_path / "src", {"train.py": "import helpers_here\nprint(1)\n", "helpers_here.py": "X = 1\n"})
    report = migrate(source / "train.py", tmp_path / "out" / "train.py")
    [status] = report.statuses
    assert not status.will_run and "local module `helpers_here` is missing" in status.blockers[0]
    assert str(source / "helpers_here.py") in status.blockers[0]


def test_notes_are_separate_from_what_needs_a_person(tmp_path: Path) -> None:
    # tf_upgrade_v2 files a "requires manual check"-style note on tf.summary.scalar: the compat
    # pass already keeps TF1's summary op, so the file runs as it is and the note is information.
    source = write(
        tmp_path / "src",
        {"summaries.py": GRAPH_SCRIPT + "s = tf.summary.scalar('loss', y)\nmerged = tf.summary.merge_all()\n"},
    )
    report = migrate(source, tmp_path / "out")
    assert report.will_run == report.files == 1
    assert report.needs_person == () and report.notes
    assert all(not item.blocks_run and not item.changes_program for item in report.notes)
    text = (tmp_path / "out" / "MIGRATION_REPORT.md").read_text()
    assert "## Notes" in text and "## Needs a person" in text


def test_exit_code_is_0_when_every_file_is_expected_to_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = write(tmp_path / "good", {"graph.py": GRAPH_SCRIPT})
    with pytest.raises(SystemExit) as exited:
        main(["migrate", str(source), str(tmp_path / "good_out")])
    assert exited.value.code == 0 and "1 of 1 expected to run" in capsys.readouterr().out
    bad = write(
        tmp_path / "bad",
        {"graph.py": GRAPH_SCRIPT, "est.py": "import tensorflow as tf\ntf.estimator.BoostedTreesClassifier\n"},
    )
    with pytest.raises(SystemExit) as exited:
        main(["migrate", str(bad), str(tmp_path / "bad_out")])
    assert exited.value.code == 1 and "1 of 2 expected to run" in capsys.readouterr().out


def test_entry_scripts_are_the_files_nothing_else_imports(tmp_path: Path) -> None:
    tree = write(
        tmp_path,
        {
            "train.py": "from lib import layers\n",
            "lib/__init__.py": "",
            "lib/layers.py": "X = 1\n",
            "tool.py": "import os\n",
            "tf1_compat_shims.py": "",
        },
    )
    assert [path.name for path in entry_scripts(tree)] == ["tool.py", "train.py"]


@pytest.mark.slow
def test_verify_runs_each_entry_script_and_reports_what_happened(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = write(
        tmp_path / "src",
        {
            "graph.py": GRAPH_SCRIPT + "import helper\nprint(helper.VALUE)\n",
            "helper.py": "VALUE = 'helper imported'\n",
            "broken.py": "import numpy as np\nprint('%f' % np.zeros(2))\n",
            "slow.py": "import time\ntime.sleep(30)\n",
        },
    )
    destination = tmp_path / "out"
    with pytest.raises(SystemExit) as exited:
        main(["migrate", str(source), str(destination), "--verify", "--verify-timeout", "20"])
    out = capsys.readouterr().out
    assert exited.value.code == 1  # every file is expected to run, but broken.py failed when run
    assert "--verify: 1 of 3 script(s) ran to the end" in out and "broken.py failed: exit 1: TypeError" in out
    report = (destination / "MIGRATION_REPORT.md").read_text()
    section = report.split("## Verified by running")[1].split("\n## ")[0]
    assert "| graph.py | ran |" in section and "| slow.py | timed out |" in section
    assert "| broken.py | failed |" in section and "helper.py" not in section
    assert not (destination / "logs").exists() and sorted(p.name for p in destination.iterdir()) == [
        "MIGRATION_REPORT.md",
        "broken.py",
        "graph.py",
        "helper.py",
        "slow.py",
    ]


@pytest.mark.slow
def test_verify_a_single_file_runs_it_with_its_helper_module(tmp_path: Path) -> None:
    dense = (
        "import tensorflow as tf\nx = tf.placeholder(tf.float32, [None, 1])\ny = tf.layers.dense(x, 1)\n"
        "with tf.Session() as sess:\n    sess.run(tf.global_variables_initializer())\n"
        "    print(sess.run(y, feed_dict={x: [[1.0]]}).shape)\n"
    )
    source = write(tmp_path / "src", {"dense.py": dense})
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "unrelated.txt").write_text("left alone\n")
    report = migrate(source / "dense.py", tmp_path / "out" / "dense.py", verify_timeout=120)
    assert (tmp_path / "out" / "tf1_compat_shims.py").exists()
    assert [(run.path, run.outcome) for run in report.verified] == [("dense.py", "ran")], report.verified
