"""Listing version directories and choosing the next: TF Serving's rule (int64 ASCII names) for every caller."""

from __future__ import annotations

import shutil
from pathlib import Path

from tfpilot.savedmodel.versions import (
    MAX_VERSION,
    is_complete_version,
    latest_version_dir,
    next_version,
    scan_versions,
    version_numbers,
)


def _dirs(base: Path, *names: str) -> None:
    for name in names:
        (base / name).mkdir(parents=True)


def test_only_numeric_directories_within_int64_are_versions(tmp_path: Path) -> None:
    _dirs(tmp_path, "1", "10", "2", ".3.partial", "latest", "007", str(MAX_VERSION + 1), "٣")
    (tmp_path / "5").write_text("a file, not a version")
    assert version_numbers(tmp_path) == [1, 2, 7, 10]
    assert scan_versions(tmp_path)[7] == tmp_path / "007"


def test_next_version_is_one_past_the_highest(tmp_path: Path) -> None:
    assert next_version(tmp_path / "missing") == 1
    assert next_version(tmp_path) == 1
    _dirs(tmp_path, "3", "12", ".13.partial")
    assert next_version(tmp_path) == 13


def test_latest_version_dir_optionally_requires_a_graph(tmp_path: Path) -> None:
    assert latest_version_dir(tmp_path) is None
    _dirs(tmp_path, "1", "2")
    (tmp_path / "1" / "saved_model.pb").write_bytes(b"")
    assert latest_version_dir(tmp_path) == tmp_path / "2"
    assert latest_version_dir(tmp_path, with_graph=True) == tmp_path / "1"


def test_a_version_is_complete_with_its_graph_and_variables_when_it_has_any(
    tmp_path: Path, affine_saved_model: Path
) -> None:
    copy = tmp_path / "1"
    shutil.copytree(affine_saved_model, copy)
    assert is_complete_version(copy)
    # A graph that declares variables without variables/ is a copy still in progress.
    shutil.rmtree(copy / "variables")
    assert not is_complete_version(copy)
    (copy / "saved_model.pb").write_bytes(b"\x0a\x05trunc")
    assert not is_complete_version(copy)
    assert not is_complete_version(tmp_path / "empty")
