"""Protobuf message classes declared at run time, for protos whose Python stubs no package ships.

tensorflow-serving-api has no monitoring_config_pb2 and TensorFlow no profiler_service_pb2, yet
the server must read a MonitoringConfig text file and answer ProfilerService calls. Declaring
the fields it needs, with the upstream field numbers, gives real parsing and serialization
(text format, wire format, errors) without copying any generated code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Field", "message_classes"]

# (name, number, type, repeated, message type name or "") -- types are descriptor_pb2's TYPE_* names.
Field = tuple[str, int, str, bool, str]
_cache: dict[tuple[str, str], dict[str, Any]] = {}


def message_classes(file_name: str, package: str, messages: Sequence[tuple[str, Sequence[Field]]]) -> dict[str, Any]:
    """Message classes by name, built once per (file, package) in a private descriptor pool."""
    key = (file_name, package)
    if key in _cache:
        return _cache[key]
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field_proto = descriptor_pb2.FieldDescriptorProto
    file_proto = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto3")
    for message_name, fields in messages:
        message = file_proto.message_type.add(name=message_name)
        for name, number, kind, repeated, type_name in fields:
            added = message.field.add(
                name=name,
                number=number,
                type=getattr(field_proto, f"TYPE_{kind.upper()}"),
                label=field_proto.LABEL_REPEATED if repeated else field_proto.LABEL_OPTIONAL,
            )
            if type_name:  # set only for message fields: an empty type_name still counts as set
                added.type_name = f".{package}.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    classes = {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}")) for name, _ in messages
    }
    _cache[key] = classes
    return classes
