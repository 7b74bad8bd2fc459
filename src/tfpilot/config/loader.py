"""Load a RunConfig from YAML with one-line errors that name the key path and the file line."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from tfpilot.atomic import atomic_write_text
from tfpilot.config.schema import RunConfig
from tfpilot.errors import ConfigError

__all__ = ["load_config", "config_from_dict", "dump_config", "config_json_schema", "set_dotted"]


def _line_index(node: yaml.Node, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], int]:
    """Map every key path in a composed YAML document to its 1-based line."""
    lines: dict[tuple[str, ...], int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = (*prefix, str(key_node.value))
            lines[path] = key_node.start_mark.line + 1
            lines.update(_line_index(value_node, path))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            path = (*prefix, str(index))
            lines[path] = item.start_mark.line + 1
            lines.update(_line_index(item, path))
    return lines


def _describe(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    message = error["msg"]
    if kind == "extra_forbidden":
        return "is not a known key; remove it or check its spelling (`tfpilot config schema` lists every key)"
    if kind == "missing":
        return "is required but missing"
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return f"{message}, got {json.dumps(error.get('input'), default=str)}"


def config_from_dict(
    raw: dict[str, Any], *, source: str = "<dict>", lines: dict[tuple[str, ...], int] | None = None
) -> RunConfig:
    """Validate a plain dict; the first error becomes one ConfigError line."""
    try:
        config = RunConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(str(part) for part in first["loc"])
        key = ".".join(loc) or "<root>"
        where = source
        if lines:
            # A missing key has no line of its own: point at its nearest parent that exists.
            for depth in range(len(loc), 0, -1):
                if loc[:depth] in lines:
                    where = f"{source}:{lines[loc[:depth]]}"
                    break
        more = f" (and {len(exc.errors()) - 1} more error(s))" if len(exc.errors()) > 1 else ""
        raise ConfigError(f"{where}: `{key}` {_describe(first)}{more}") from None
    # Losses, metrics and the early-stopping monitor depend on model.task and train together.
    from tfpilot.config.objectives import objective_problems

    problems = objective_problems(config)
    if problems:
        loc, message = problems[0]
        where = source
        for depth in range(len(loc), 0, -1):
            if lines and loc[:depth] in lines:
                where = f"{source}:{lines[loc[:depth]]}"
                break
        more = f" (and {len(problems) - 1} more error(s))" if len(problems) > 1 else ""
        raise ConfigError(f"{where}: `{'.'.join(loc)}` {message}{more}")
    return config


def load_config(path: str | Path, *, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Read YAML, resolve data paths relative to the config file, validate."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file `{path}` does not exist; pass the path of a YAML run config")
    text = path.read_text()
    try:
        document = yaml.compose(text)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}{line}: invalid YAML ({problem}); fix the syntax at that line") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{path}: the config must be a mapping of sections (data, model, train, ...), got {type(raw).__name__}"
        )
    lines = _line_index(document) if document is not None else {}
    for dotted, value in (overrides or {}).items():
        set_dotted(raw, dotted, value)
    data = raw.get("data")
    if isinstance(data, dict) and isinstance(data.get("path"), str):
        data_path = Path(data["path"]).expanduser()
        if not data_path.is_absolute():
            data_path = (path.parent / data_path).resolve()
        data["path"] = str(data_path)
    config = config_from_dict(raw, source=str(path), lines=lines)
    if config.data.path is not None and not config.data.path.exists():
        data_line = lines.get(("data", "path"))
        where = f"{path}:{data_line}" if data_line else str(path)
        raise ConfigError(
            f"{where}: `data.path` points to `{config.data.path}`, which does not exist; "
            "expected an existing folder or file (relative paths are resolved from the config file)"
        )
    return config


def set_dotted(raw: dict[str, Any], dotted: str, value: Any) -> None:
    node = raw
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value


def dump_config(config: RunConfig, path: str | Path) -> None:
    """Write the resolved config (every default filled in), atomically."""
    data = json.loads(config.model_dump_json())
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))


def config_json_schema() -> dict[str, Any]:
    return RunConfig.model_json_schema()
