"""Train-config fixes: YAML booleans for jit_compile."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfpilot.config import load_config
from tfpilot.config.schema import JitCompile
from tfpilot.errors import ConfigError


@pytest.mark.parametrize(
    ("written", "expected"),
    [("false", JitCompile.FALSE), ("true", JitCompile.TRUE), ("auto", JitCompile.AUTO), ("'false'", JitCompile.FALSE)],
)
def test_jit_compile_accepts_yaml_booleans(tmp_path: Path, written: str, expected: JitCompile) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(f"name: t\ndata: {{kind: arrays}}\ntrain: {{jit_compile: {written}}}\n")
    assert load_config(path).train.jit_compile == expected


def test_jit_compile_still_rejects_other_values(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("name: t\ndata: {kind: arrays}\ntrain: {jit_compile: sometimes}\n")
    with pytest.raises(ConfigError, match="jit_compile"):
        load_config(path)
