"""load_config errors: one ConfigError line naming the key path AND the file line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfpilot.config import load_config
from tfpilot.errors import ConfigError

# Line numbers below refer to this layout (1-based).
VALID = """\
name: unit
data:
  kind: image_folder
  path: {data}
  split: {{validation: 0.2, test: 0.2, seed: 1}}
model:
  name: mlp
  hidden_units: [8]
train:
  epochs: 2
  batch_size: 16
  optimizer:
    learning_rate: 0.01
"""


def write(tmp_path: Path, text: str, *, data: str = "images") -> Path:
    (tmp_path / "images").mkdir(exist_ok=True)
    path = tmp_path / "run.yaml"
    path.write_text(text.format(data=data))
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message, f"error must be one line: {message!r}"
    assert caught.value.exit_code == 2
    return message


def test_valid_config_loads_and_resolves_relative_data_path(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, VALID))
    assert config.data.path == (tmp_path / "images").resolve()
    assert config.train.epochs == 2 and config.model.hidden_units == [8]
    assert config.run_path == Path("runs") / "unit"


def test_wrong_type_names_key_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("epochs: 2", "epochs: many"))
    message = error_of(path)
    assert f"{path}:10:" in message
    assert "`train.epochs`" in message
    assert '"many"' in message  # the value received


def test_unknown_key_names_key_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("  batch_size: 16", "  batch_size: 16\n  epoch: 3"))
    message = error_of(path)
    assert f"{path}:12:" in message
    assert "`train.epoch`" in message
    assert "not a known key" in message


def test_unknown_nested_key_names_full_path(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("learning_rate: 0.01", "learning_rate: 0.01\n    lr: 0.1"))
    message = error_of(path)
    assert f"{path}:14:" in message and "`train.optimizer.lr`" in message


def test_missing_data_path_names_key_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, VALID, data="does/not/exist")
    message = error_of(path)
    assert f"{path}:4:" in message
    assert "`data.path`" in message and "does not exist" in message
    assert str((tmp_path / "does/not/exist").resolve()) in message


@pytest.mark.parametrize(
    ("old", "new", "key", "line"),
    [
        ("batch_size: 16", "batch_size: 0", "train.batch_size", 11),
        ("epochs: 2", "epochs: -1", "train.epochs", 10),
        ("learning_rate: 0.01", "learning_rate: 0", "train.optimizer.learning_rate", 13),
        ("hidden_units: [8]", "hidden_units: [8, 0]", "model.hidden_units.1", 8),
        ("name: mlp", "name: resnet9000", "model.name", 7),
        ("name: mlp", "name: 'not a factory:'", "model.name", 7),
        ("name: unit", "name: ../escape", "name", 1),
    ],
)
def test_impossible_values(tmp_path: Path, old: str, new: str, key: str, line: int) -> None:
    assert old in VALID
    path = write(tmp_path, VALID.replace(old, new, 1))
    message = error_of(path)
    assert f"{path}:{line}:" in message
    assert f"`{key}`" in message
    assert re.search(r"got ", message), message  # the value received is shown


def test_split_fractions_must_leave_training_data(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("validation: 0.2, test: 0.2", "validation: 0.5, test: 0.5"))
    message = error_of(path)
    assert f"{path}:5:" in message and "`data.split`" in message and "< 1" in message


def test_missing_required_section(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("name: x\ntrain:\n  epochs: 1\n")
    message = error_of(path)
    assert "`data`" in message and "required" in message


def test_data_path_required_for_files(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("data:\n  kind: csv\n")
    message = error_of(path)
    assert f"{path}:1:" in message and "data.path is required" in message


def test_invalid_yaml_names_line(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("data:\n  kind: csv\n  path: [unclosed\n")
    message = error_of(path)
    assert "invalid YAML" in message and re.search(rf"{re.escape(str(path))}:\d+:", message)


def test_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("- a\n- b\n")
    assert "must be a mapping" in error_of(path)


def test_missing_file(tmp_path: Path) -> None:
    message = error_of(tmp_path / "nope.yaml")
    assert "does not exist" in message and "nope.yaml" in message


def test_several_errors_are_counted_not_dumped(tmp_path: Path) -> None:
    path = write(tmp_path, VALID.replace("epochs: 2", "epochs: 0").replace("batch_size: 16", "batch_size: 0"))
    message = error_of(path)
    assert "(and 1 more error(s))" in message
