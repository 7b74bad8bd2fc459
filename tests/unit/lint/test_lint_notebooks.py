"""`tfpilot lint` reads Jupyter notebooks: code cells as IPython runs them, findings name their cell."""

from __future__ import annotations

import json
from pathlib import Path

from tfpilot.lint.engine import lint_paths
from tfpilot.lint.fixer import fix_files
from tfpilot.lint.notebooks import notebook_to_python

CELLS = [
    {"cell_type": "markdown", "source": ["# A notebook\n", "import tensorflow as tf  # prose, not code"]},
    {
        "cell_type": "code",
        "source": ["!pip install -q tensorflow\n", "import numpy as np\n", "import tensorflow as tf"],
    },
    {
        "cell_type": "code",
        "source": [
            "%matplotlib inline\n",
            "best = np.Inf\n",
            "model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n",
            "model.compile(optimizer=tf.keras.optimizers.Adam(lr=0.1), loss='mse')",
        ],
    },
    {"cell_type": "code", "source": "worst = np.NaN  # tfpilot: noqa[TFP514]\n"},
]


def _notebook(path: Path, cells: list[dict]) -> Path:
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_a_notebook_in_a_directory_is_linted_and_each_finding_names_its_code_cell(tmp_path: Path) -> None:
    _notebook(tmp_path / "train.ipynb", CELLS)
    report = lint_paths([tmp_path], jobs=1)
    found = {(f.code, f.location.split(":", 1)[1]): f.message for f in report.findings}
    # the joined code: cell 1 is lines 1-3, a blank line, cell 2 lines 5-8 (the magic a `pass`)
    assert set(found) == {("TFP514", "6:8"), ("TFP505", "8:50")}, found
    assert found[("TFP514", "6:8")].endswith("[code cell 2, line 2]")
    assert found[("TFP505", "8:50")].endswith("[code cell 2, line 4]")
    # the noqa comment in the third code cell works as in a file; the markdown cell is not code
    assert all(not (f.evidence or {}).get("fixable") for f in report.findings)


def test_fix_leaves_a_notebook_as_it_was(tmp_path: Path) -> None:
    path = _notebook(tmp_path / "train.ipynb", CELLS)
    before = path.read_bytes()
    assert fix_files([path]) == []
    assert path.read_bytes() == before


def test_a_file_that_is_not_a_notebook_is_a_one_line_note(tmp_path: Path) -> None:
    (tmp_path / "half.ipynb").write_text('{"cells": [')
    report = lint_paths([tmp_path], jobs=1)
    (finding,) = report.findings
    assert finding.code == "TFP000" and "not a Jupyter notebook: invalid JSON" in finding.message


def test_code_cells_keep_their_line_count_and_map_back() -> None:
    notebook = notebook_to_python(json.dumps({"cells": CELLS}))
    lines = notebook.source.splitlines()
    assert lines[0] == "pass  # !pip install -q tensorflow" and lines[4] == "pass  # %matplotlib inline"
    assert notebook.cells == (1, 5, 10)
    assert [notebook.where(line) for line in (1, 3, 5, 8, 10)] == [(1, 1), (1, 3), (2, 1), (2, 4), (3, 1)]
