"""--fix: libcst rewrites that keep formatting, stay valid Python and leave the rest alone."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

from tfpilot.lint import fix_files, fix_source, lint_source

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lint"


def test_fixes_keras2_leftovers_and_keeps_untouched_lines_identical():
    source = (FIXTURES / "tf2" / "keras2_leftovers.py").read_text()
    result = fix_source(source, path="keras2_leftovers.py")
    assert result.changed
    ast.parse(result.fixed_source)
    fixed_codes = sorted({fix.code for fix in result.applied})
    assert fixed_codes == ["TFP107", "TFP402", "TFP501", "TFP504", "TFP505"]
    assert "from tensorflow.keras.layers import Rescaling" in result.fixed_source
    assert "model.fit(generator, epochs=epochs)" in result.fixed_source
    assert "accuracy.reset_state()" in result.fixed_source
    assert 'model.export("exported/model")' in result.fixed_source
    assert "keras.optimizers.Adam(learning_rate=1e-3, decay=1e-5)" in result.fixed_source
    assert "@tf.function(reduce_retracing=True)" in result.fixed_source
    touched = {fix.line for fix in result.applied}
    before, after = source.splitlines(), result.fixed_source.splitlines()
    assert len(before) == len(after)
    for number, (old, new) in enumerate(zip(before, after, strict=False), start=1):
        if number not in touched:
            assert old == new, number
    remaining = lint_source(result.fixed_source)
    assert not [f for f in remaining if f.evidence.get("fixable")]
    assert {"TFP505", "TFP403", "TFP406"} <= {f.code for f in remaining}  # decay=, paths: need a person


def test_fix_is_idempotent():
    source = (FIXTURES / "tf2" / "input_pipeline.py").read_text()
    once = fix_source(source)
    twice = fix_source(once.fixed_source)
    assert once.applied and not twice.applied and twice.fixed_source == once.fixed_source


def test_suppressed_findings_are_not_fixed():
    source = "accuracy.reset_states()  # tfpilot: noqa[TFP501]\n"
    assert fix_source(source).fixed_source == source


def test_fix_files_rewrites_in_place_and_keeps_the_file_mode(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import keras\nopt = keras.optimizers.SGD(lr=0.1)\n")
    os.chmod(path, 0o644)
    (result,) = fix_files([path])
    assert path.read_text() == "import keras\nopt = keras.optimizers.SGD(learning_rate=0.1)\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [fix.code for fix in result.applied] == ["TFP505"]
    assert fix_files([path]) == []
