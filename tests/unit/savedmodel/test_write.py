"""Writing a version: it appears under its number only after verification passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfpilot.errors import ExportError
from tfpilot.savedmodel.write import claim_version, write_verified_version


def _archive() -> object:
    import keras

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serving_default",
        lambda x: model(x, training=False),
        input_signature=[keras.InputSpec(shape=(None, 2), dtype="float32")],
    )
    return archive


def test_claim_version_picks_the_next_number_and_refuses_an_existing_one(tmp_path: Path) -> None:
    assert claim_version(tmp_path) == (1, tmp_path / "1")
    (tmp_path / "4").mkdir()
    assert claim_version(tmp_path) == (5, tmp_path / "5")
    assert claim_version(tmp_path, 9) == (9, tmp_path / "9")
    with pytest.raises(ExportError, match="version 4 already exists") as raised:
        claim_version(tmp_path, 4)
    assert raised.value.exit_code == 2


def test_a_verified_version_appears_and_a_failed_one_leaves_nothing(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def verify(staged: Path) -> str:
        # Verification sees the complete SavedModel, and a server polling the base path does not.
        seen.append(sorted(p.name for p in staged.iterdir()))
        assert not (tmp_path / "1").exists()
        return "checked"

    assert write_verified_version(_archive(), tmp_path / "1", verify) == "checked"
    assert "saved_model.pb" in seen[0] and "variables" in seen[0]
    assert (tmp_path / "1" / "saved_model.pb").is_file()

    def refuse(staged: Path) -> None:
        raise ExportError("outputs differ")

    with pytest.raises(ExportError, match="outputs differ"):
        write_verified_version(_archive(), tmp_path / "2", refuse)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1"]
