"""docs/foundation.md's config reference is generated from the schema and must stay current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def load_script():
    spec = importlib.util.spec_from_file_location("gen_config_reference", ROOT / "scripts" / "gen_config_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_lists_every_leaf_key() -> None:
    from tfpilot.config import config_json_schema

    table = load_script().render(config_json_schema())
    for key in (
        "train.batch_size",
        "train.optimizer.learning_rate",
        "data.split.seed",
        "train.early_stopping.patience",
        "export.parity.max_accuracy_drop",
        "monitor.gate",
    ):
        assert f"| `{key}` |" in table, key
    assert "| `train.batch_size` | integer (> 0) | `64` | Global batch size" in table
    assert "| `data` | section | required |" in table


def test_docs_reference_is_up_to_date() -> None:
    from tfpilot.config import config_json_schema

    script = load_script()
    text = (ROOT / "docs" / "foundation.md").read_text()
    block = text.split(script.START, 1)[1].split(script.END, 1)[0]
    assert block.strip() == script.render(config_json_schema()).strip(), (
        "docs/foundation.md's config reference is stale; run "
        "`.venv/bin/python scripts/gen_config_reference.py --update docs/foundation.md`"
    )
