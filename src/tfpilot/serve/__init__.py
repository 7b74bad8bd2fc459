"""A TensorFlow-Serving-compatible REST and gRPC model server: versions, hot reload, batching.

Importing this package is cheap; TensorFlow loads when a server starts or a model loads.
"""

from tfpilot.serve.batching import Batcher
from tfpilot.serve.metrics import MetricsRegistry
from tfpilot.serve.model_config import (
    BatchingParameters,
    ServedModel,
    VersionPolicy,
    load_batching_parameters_file,
    load_model_config_file,
    parse_batching_parameters,
    parse_model_config,
)
from tfpilot.serve.registry import ModelRegistry, ModelState, VersionStatus
from tfpilot.serve.request_log import LoggedRequest, RequestLog, read_requests
from tfpilot.serve.server import DEFAULT_MAX_REQUEST_BYTES, ModelServer, ServerOptions
from tfpilot.serve.status import Code, RequestError

__all__ = [
    "ModelServer",
    "ServerOptions",
    "DEFAULT_MAX_REQUEST_BYTES",
    "ServedModel",
    "VersionPolicy",
    "BatchingParameters",
    "parse_model_config",
    "load_model_config_file",
    "parse_batching_parameters",
    "load_batching_parameters_file",
    "ModelRegistry",
    "ModelState",
    "VersionStatus",
    "Batcher",
    "MetricsRegistry",
    "RequestLog",
    "LoggedRequest",
    "read_requests",
    "Code",
    "RequestError",
]
