"""Which models to serve: TF Serving's text-proto model config and batching parameters.

``--model_config_file`` holds a ``ModelServerConfig`` text proto (``model_config_list``) and
``--batching_parameters_file`` a ``BatchingParameters`` text proto. Both are parsed with
protobuf's own text format, so any file TF Serving accepts parses here with the same rules.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any

from tfpilot.errors import ServeError

__all__ = [
    "VersionPolicy",
    "ServedModel",
    "BatchingParameters",
    "parse_model_config",
    "load_model_config_file",
    "parse_batching_parameters",
    "load_batching_parameters_file",
    "validate_model_name",
    "check_base_path",
]

_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")


@dataclasses.dataclass(frozen=True)
class VersionPolicy:
    """TF Serving's model_version_policy: ``latest`` N (default 1), ``all`` or ``specific``."""

    kind: str = "latest"
    num_versions: int = 1
    versions: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("latest", "all", "specific"):
            raise ServeError(f"version policy must be latest, all or specific, got `{self.kind}`")
        if self.kind == "latest" and self.num_versions < 1:
            raise ServeError(f"model_version_policy latest.num_versions must be >= 1, got {self.num_versions}")
        if self.kind == "specific" and not self.versions:
            raise ServeError("model_version_policy specific{} lists no versions; add `versions: N`")

    def select(self, candidates: list[int]) -> set[int]:
        """The versions this policy wants served, out of the loadable ones on disk."""
        if self.kind == "all":
            return set(candidates)
        if self.kind == "specific":
            return set(candidates) & set(self.versions)
        return set(sorted(candidates)[-self.num_versions :])

    def describe(self) -> str:
        if self.kind == "latest":
            return f"latest {{ num_versions: {self.num_versions} }}"
        if self.kind == "all":
            return "all {}"
        return "specific { " + " ".join(f"versions: {v}" for v in self.versions) + " }"


@dataclasses.dataclass(frozen=True)
class ServedModel:
    """One entry of model_config_list: a name, a base path of numeric versions, policy, labels."""

    name: str
    base_path: Path
    version_policy: VersionPolicy = VersionPolicy()
    version_labels: dict[str, int] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        validate_model_name(self.name)
        for label in self.version_labels:
            if not _MODEL_NAME.fullmatch(label):
                raise ServeError(
                    f"version label `{label}` of model `{self.name}` must be letters, digits, `_`, `-` or `.`"
                )


@dataclasses.dataclass(frozen=True)
class BatchingParameters:
    """Server-side batching. Defaults follow TF Serving's BasicBatchScheduler options."""

    max_batch_size: int = 1000
    batch_timeout_micros: int = 0
    max_enqueued_batches: int = 10
    num_batch_threads: int = dataclasses.field(default_factory=lambda: os.cpu_count() or 1)
    allowed_batch_sizes: tuple[int, ...] = ()
    pad_variable_length_inputs: bool = False

    def __post_init__(self) -> None:
        for field in ("max_batch_size", "max_enqueued_batches", "num_batch_threads"):
            if getattr(self, field) < 1:
                raise ServeError(f"batching parameter `{field}` must be >= 1, got {getattr(self, field)}")
        if self.batch_timeout_micros < 0:
            raise ServeError(f"batching parameter `batch_timeout_micros` must be >= 0, got {self.batch_timeout_micros}")
        sizes = list(self.allowed_batch_sizes)
        if sizes and (sizes != sorted(set(sizes)) or sizes[-1] != self.max_batch_size or sizes[0] < 1):
            raise ServeError(
                f"`allowed_batch_sizes` must increase and end with max_batch_size {self.max_batch_size}, got {sizes}"
            )


def validate_model_name(name: str) -> str:
    # Names appear in URLs and metric labels; path separators would also let a name escape
    # the directories the operator configured.
    if not isinstance(name, str) or not _MODEL_NAME.fullmatch(name):
        raise ServeError(f"model name must be letters, digits, `_`, `-` or `.` (no path separators), got `{name}`")
    return name


def check_base_path(base_path: str | Path, *, model_name: str) -> Path:
    """Resolve and sanity-check a base path; the mistakes TF Serving users hit get a named fix."""
    text = str(base_path)
    if re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*://", text):
        raise ServeError(
            f"base path of model `{model_name}` must be a local directory, got `{text}`; copy the model locally first"
        )
    path = Path(text).expanduser().resolve()
    if not path.exists():
        raise ServeError(
            f"base path of model `{model_name}` does not exist: {path}; pass the directory that holds numeric "
            "version subdirectories, e.g. runs/<name>/model"
        )
    if not path.is_dir():
        raise ServeError(f"base path of model `{model_name}` is not a directory: {path}")
    if (path / "saved_model.pb").exists() or (path / "saved_model.pbtxt").exists():
        raise ServeError(
            f"base path of model `{model_name}` is itself a SavedModel: {path}; servers read numeric version "
            f"subdirectories, so move it to {path}/1 or pass its parent"
        )
    return path


# ----------------------------------------------------------------------------- model config


def parse_model_config(text: str, *, source: str = "<model config>") -> list[ServedModel]:
    """Parse a ModelServerConfig text proto holding a model_config_list."""
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    message = model_server_config_pb2.ModelServerConfig()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as error:
        # TF Serving's own wording first: launch scripts and its test suite grep stderr for it.
        raise ServeError(
            f"{source}: Error parsing text-format tensorflow.serving.ModelServerConfig: {error} "
            "(expected `model_config_list { config { name: ... base_path: ... } }`)"
        ) from None
    if message.WhichOneof("config") != "model_config_list":
        raise ServeError(f"{source}: expected a `model_config_list {{ config {{ ... }} }}` block")
    models: list[ServedModel] = []
    seen: set[str] = set()
    for entry in message.model_config_list.config:
        if not entry.name:
            raise ServeError(f"{source}: every config needs a `name`")
        if entry.name in seen:
            raise ServeError(f"{source}: model `{entry.name}` is configured twice")
        seen.add(entry.name)
        if not entry.base_path:
            raise ServeError(f"{source}: model `{entry.name}` needs a `base_path`")
        if entry.model_platform not in ("", "tensorflow"):
            raise ServeError(
                f"{source}: model `{entry.name}` has model_platform `{entry.model_platform}`; only `tensorflow` is served"
            )
        try:
            models.append(
                ServedModel(
                    name=entry.name,
                    base_path=Path(entry.base_path),
                    version_policy=_policy_from_proto(entry.model_version_policy),
                    version_labels=dict(entry.version_labels),
                )
            )
        except ServeError as error:
            raise ServeError(f"{source}: {error}") from None
    if not models:
        raise ServeError(f"{source}: model_config_list lists no models")
    return models


def _policy_from_proto(policy: Any) -> VersionPolicy:
    kind = policy.WhichOneof("policy_choice")
    if kind == "all":
        return VersionPolicy(kind="all")
    if kind == "specific":
        return VersionPolicy(kind="specific", versions=tuple(sorted(set(policy.specific.versions))))
    if kind == "latest":
        return VersionPolicy(kind="latest", num_versions=policy.latest.num_versions or 1)
    return VersionPolicy()


def load_model_config_file(path: str | Path) -> list[ServedModel]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ServeError(f"cannot read --model_config_file {path}: {error.strerror}") from None
    return parse_model_config(text, source=str(path))


# ------------------------------------------------------------------------ batching parameters

_BATCHING_MESSAGE: Any = None


def _batching_message_class() -> Any:
    """TF Serving's BatchingParameters message, built at run time when its module is absent.

    tensorflow-serving-api ships the apis/ and config/ protos but not
    servables/tensorflow/session_bundle_config.proto, so the message is declared here with
    the same field names and wrapper types; text_format then applies protobuf's exact rules.
    """
    global _BATCHING_MESSAGE
    if _BATCHING_MESSAGE is not None:
        return _BATCHING_MESSAGE
    try:
        from tensorflow_serving.servables.tensorflow import session_bundle_config_pb2

        _BATCHING_MESSAGE = session_bundle_config_pb2.BatchingParameters
        return _BATCHING_MESSAGE
    except ImportError:
        pass
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, wrappers_pb2

    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(wrappers_pb2.DESCRIPTOR.serialized_pb))
    file_proto = descriptor_pb2.FileDescriptorProto(
        name="tfpilot/batching_parameters.proto",
        package="tensorflow.serving",
        syntax="proto3",
        dependency=["google/protobuf/wrappers.proto"],
    )
    message = file_proto.message_type.add(name="BatchingParameters")
    field_type = descriptor_pb2.FieldDescriptorProto
    wrapped = [
        ("max_batch_size", ".google.protobuf.Int64Value"),
        ("batch_timeout_micros", ".google.protobuf.Int64Value"),
        ("max_enqueued_batches", ".google.protobuf.Int64Value"),
        ("num_batch_threads", ".google.protobuf.Int64Value"),
        ("thread_pool_name", ".google.protobuf.StringValue"),
    ]
    for number, (name, type_name) in enumerate(wrapped, start=1):
        message.field.add(
            name=name, number=number, type=field_type.TYPE_MESSAGE, label=field_type.LABEL_OPTIONAL, type_name=type_name
        )
    message.field.add(name="allowed_batch_sizes", number=6, type=field_type.TYPE_INT64, label=field_type.LABEL_REPEATED)
    message.field.add(
        name="pad_variable_length_inputs", number=7, type=field_type.TYPE_BOOL, label=field_type.LABEL_OPTIONAL
    )
    message.field.add(
        name="enable_large_batch_splitting",
        number=8,
        type=field_type.TYPE_MESSAGE,
        label=field_type.LABEL_OPTIONAL,
        type_name=".google.protobuf.BoolValue",
    )
    pool.Add(file_proto)
    descriptor = pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters")
    _BATCHING_MESSAGE = message_factory.GetMessageClass(descriptor)
    return _BATCHING_MESSAGE


def parse_batching_parameters(text: str, *, source: str = "<batching parameters>") -> BatchingParameters:
    from google.protobuf import text_format

    message = _batching_message_class()()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as error:
        raise ServeError(f"{source}: not a valid BatchingParameters text proto: {error}") from None
    values: dict[str, Any] = {}
    for name in ("max_batch_size", "batch_timeout_micros", "max_enqueued_batches", "num_batch_threads"):
        if message.HasField(name):
            values[name] = int(getattr(message, name).value)
    if message.allowed_batch_sizes:
        values["allowed_batch_sizes"] = tuple(int(v) for v in message.allowed_batch_sizes)
    values["pad_variable_length_inputs"] = bool(message.pad_variable_length_inputs)
    try:
        return BatchingParameters(**values)
    except ServeError as error:
        raise ServeError(f"{source}: {error}") from None


def load_batching_parameters_file(path: str | Path) -> BatchingParameters:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ServeError(f"cannot read --batching_parameters_file {path}: {error.strerror}") from None
    return parse_batching_parameters(text, source=str(path))


# ----------------------------------------------------------------------------- monitoring config


def parse_monitoring_config(text: str, *, source: str = "<monitoring config>") -> str | None:
    """TF Serving's MonitoringConfig text proto -> the Prometheus path, or None when disabled.

    ``prometheus_config { enable: true, path: "/monitoring/prometheus/metrics" }``; an empty
    path means TF Serving's default path.
    """
    from google.protobuf import text_format

    from tfpilot.serve.metrics import DEFAULT_METRICS_PATH
    from tfpilot.serve.proto_subset import message_classes

    classes = message_classes(
        "tfpilot/monitoring_config_subset.proto",
        "tensorflow.serving",
        [
            ("PrometheusConfig", [("enable", 1, "bool", False, ""), ("path", 2, "string", False, "")]),
            ("MonitoringConfig", [("prometheus_config", 1, "message", False, "PrometheusConfig")]),
        ],
    )
    message = classes["MonitoringConfig"]()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as error:
        raise ServeError(
            f"{source}: Error parsing text-format tensorflow.serving.MonitoringConfig: {error} "
            '(expected `prometheus_config { enable: true, path: "/monitoring/prometheus/metrics" }`)'
        ) from None
    config = message.prometheus_config
    if not config.enable:
        return None
    path = config.path or DEFAULT_METRICS_PATH
    if not path.startswith("/"):
        raise ServeError(f"{source}: prometheus_config.path must start with `/`, got `{path}`")
    return path


def load_monitoring_config_file(path: Path) -> str | None:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ServeError(f"cannot read --monitoring_config_file {path}: {error}") from None
    return parse_monitoring_config(text, source=str(path))
