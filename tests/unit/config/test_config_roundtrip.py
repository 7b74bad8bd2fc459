"""The resolved config (every default filled in) round-trips, and the JSON Schema is usable."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tfpilot.config import RunConfig, config_from_dict, config_json_schema, dump_config, load_config
from tfpilot.config.schema import NanPolicy, ScheduleKind


def test_dump_then_load_gives_the_same_config(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    source = tmp_path / "in.yaml"
    source.write_text(
        "name: rt\ndata: {path: images, cache: none}\n"
        "train: {epochs: 3, clip_norm: null, nan_policy: skip_batch, optimizer: {schedule: cosine}}\n"
        "export: {formats: [saved_model, tflite]}\n"
    )
    config = load_config(source)
    resolved = tmp_path / "resolved" / "config.yaml"
    dump_config(config, resolved)
    again = load_config(resolved)
    assert again == config
    assert again.train.nan_policy is NanPolicy.SKIP_BATCH
    assert again.train.optimizer.schedule is ScheduleKind.COSINE
    assert again.train.clip_norm is None
    # Every default is written out, so the file documents exactly what ran.
    written = yaml.safe_load(resolved.read_text())
    assert written["train"]["batch_size"] == 64
    assert written["train"]["early_stopping"]["patience"] == 5
    assert written["monitor"]["gate"] == [{"metric": "accuracy", "op": ">=", "value": 0.9, "relative": False}]
    assert Path(written["data"]["path"]).is_absolute()
    # No temporary sibling is left behind by the atomic write.
    assert sorted(p.name for p in resolved.parent.iterdir()) == ["config.yaml"]


def test_defaults_for_arrays_need_no_path() -> None:
    config = config_from_dict({"data": {"kind": "arrays"}})
    assert config.data.path is None
    assert config.model.name == "mlp"
    assert config.train.early_stopping is not None and config.train.early_stopping.monitor == "val_loss"


def test_json_schema_is_valid_json_and_documents_fields() -> None:
    schema = json.loads(json.dumps(config_json_schema()))
    assert schema["title"] == "RunConfig"
    assert set(schema["properties"]) >= {"name", "data", "model", "train", "export", "serve", "monitor"}
    assert schema["required"] == ["data"]
    train = schema["$defs"]["TrainConfig"]
    assert train["additionalProperties"] is False
    assert train["properties"]["batch_size"]["exclusiveMinimum"] == 0
    assert "Global batch size" in train["properties"]["batch_size"]["description"]
    assert schema["$defs"]["NanPolicy"]["enum"] == ["stop", "skip_batch", "rollback"]


def test_every_leaf_field_has_a_description() -> None:
    """Each field is documented once, in the schema; docs/foundation.md is generated from it."""
    schema = config_json_schema()
    undocumented = []
    for section, definition in schema["$defs"].items():
        for field, spec in definition.get("properties", {}).items():
            is_section = "$ref" in spec or any("$ref" in option for option in spec.get("anyOf", []))
            if not is_section and not spec.get("description"):
                undocumented.append(f"{section}.{field}")
    assert not undocumented, f"fields without a description: {undocumented}"


def test_model_validate_rejects_assignment_of_bad_values() -> None:
    import pydantic
    import pytest

    config = RunConfig.model_validate({"data": {"kind": "arrays"}})
    with pytest.raises(pydantic.ValidationError):
        config.train.batch_size = 0
