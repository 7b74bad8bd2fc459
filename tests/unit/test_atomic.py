"""Atomic writes: a failure never leaves a partial file or directory, and keeps what was there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfpilot.atomic import atomic_directory, atomic_write_bytes, atomic_write_json, atomic_write_text


def test_write_text_json_bytes(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "deep" / "a.txt", "héllo")
    atomic_write_json(tmp_path / "b.json", {"x": [1, 2], "path": tmp_path})
    atomic_write_bytes(tmp_path / "c.bin", b"\x00\x01")
    assert (tmp_path / "deep" / "a.txt").read_text(encoding="utf-8") == "héllo"
    assert json.loads((tmp_path / "b.json").read_text()) == {"x": [1, 2], "path": str(tmp_path)}
    assert (tmp_path / "c.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "c.bin", "deep"]


def test_failed_file_write_keeps_old_content_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "metrics.json"
    atomic_write_json(target, {"ok": 1})
    with pytest.raises(TypeError):
        atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert json.loads(target.read_text()) == {"ok": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_directory_appears_only_when_complete(tmp_path: Path) -> None:
    final = tmp_path / "model" / "1"
    with atomic_directory(final) as tmp:
        (tmp / "saved_model.pb").write_text("graph")
        assert not final.exists()  # nothing is visible under the final name while writing
        assert tmp.parent == final.parent and tmp.name.startswith(".") and not tmp.name.isdigit()
    assert (final / "saved_model.pb").read_text() == "graph"
    assert [p.name for p in final.parent.iterdir()] == ["1"]


def test_failure_inside_leaves_no_partial_dir_and_keeps_old_one(tmp_path: Path) -> None:
    final = tmp_path / "model" / "1"
    with atomic_directory(final) as tmp:
        (tmp / "version.txt").write_text("old")
    with pytest.raises(RuntimeError, match="export crashed"):
        with atomic_directory(final, overwrite=True) as tmp:
            (tmp / "version.txt").write_text("new, half written")
            raise RuntimeError("export crashed")
    assert (final / "version.txt").read_text() == "old"
    assert [p.name for p in final.parent.iterdir()] == ["1"]  # the temporary sibling is gone


def test_failure_for_a_new_dir_leaves_nothing(tmp_path: Path) -> None:
    final = tmp_path / "model" / "2"
    with pytest.raises(KeyboardInterrupt):
        with atomic_directory(final) as tmp:
            (tmp / "partial").write_text("x")
            raise KeyboardInterrupt
    assert list(final.parent.iterdir()) == []


def test_existing_dir_is_not_overwritten_by_default(tmp_path: Path) -> None:
    final = tmp_path / "v"
    final.mkdir()
    (final / "keep").write_text("keep")
    with pytest.raises(FileExistsError):
        with atomic_directory(final) as tmp:
            (tmp / "new").write_text("new")
    assert [p.name for p in final.iterdir()] == ["keep"]
    assert [p.name for p in tmp_path.iterdir()] == ["v"]
    with atomic_directory(final, overwrite=True) as tmp:
        (tmp / "new").write_text("new")
    assert [p.name for p in final.iterdir()] == ["new"]
