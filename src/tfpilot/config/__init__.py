"""Typed run configuration: schema and YAML loading."""

from tfpilot.config.loader import config_from_dict, config_json_schema, dump_config, load_config
from tfpilot.config.schema import *  # noqa: F403  (the schema module curates its own __all__)
from tfpilot.config.schema import __all__ as _schema_all

__all__ = ["load_config", "config_from_dict", "dump_config", "config_json_schema", *_schema_all]
