"""The layering that tfpilot.savedmodel exists for: serve reads models without importing export."""

from __future__ import annotations

import ast
from pathlib import Path

import tfpilot.serve

SERVE = Path(tfpilot.serve.__file__).parent


def _imported_modules(source: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_serve_imports_nothing_from_export() -> None:
    # Every import counts, the ones inside functions too: they run as soon as a model loads.
    offenders = {
        f"{source.relative_to(SERVE)}: {name}"
        for source in sorted(SERVE.rglob("*.py"))
        for name in _imported_modules(source)
        if name == "tfpilot.export" or name.startswith("tfpilot.export.")
    }
    assert not offenders, f"serve must read SavedModels through tfpilot.savedmodel, not export: {sorted(offenders)}"


def test_the_check_sees_function_level_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def load():\n    from tfpilot.export.verify import run_with_session_loader\n")
    assert "tfpilot.export.verify" in _imported_modules(probe)


def test_importing_savedmodel_loads_no_tensorflow() -> None:
    # rundir and the serve package import it, and neither may pull TensorFlow in at import.
    import subprocess
    import sys

    code = "import sys, tfpilot.savedmodel, tfpilot.rundir; print('tensorflow' in sys.modules)"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "False"
