"""Warm a freshly loaded version before it takes traffic.

TF Serving replays ``assets.extra/tf_serving_warmup_requests`` (a TFRecord file of
PredictionLog protos, at most 1000) so the first real requests are not slow; a version whose
warmup fails does not load. Without that file nothing is called at load, as in TF Serving.
The file is read by tfpilot.savedmodel, the reader export verifies its own records with.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.errors import ExportError, ServeError
from tfpilot.savedmodel.warmup import MAX_WARMUP_RECORDS, WARMUP_PATH
from tfpilot.savedmodel.warmup import read_warmup_records as read_records
from tfpilot.serve.servable import Servable
from tfpilot.serve.tensors import serialized_examples, tensor_proto_to_array

__all__ = ["WARMUP_FILE", "MAX_WARMUP_RECORDS", "warmup_servable", "read_warmup_records"]

WARMUP_FILE = WARMUP_PATH
_log = logging.getLogger("tfpilot.serve")


def read_warmup_records(path: Path) -> list[Any]:
    """PredictionLog protos from a warmup file; a file TF Serving would refuse raises ServeError."""
    try:
        return read_records(path)
    except ExportError as error:
        raise ServeError(str(error)) from None


def _replay(servable: Servable, record: Any) -> None:
    kind = record.WhichOneof("log_type")
    if kind == "predict_log":
        request = record.predict_log.request
        signature = servable.predict_signature(request.model_spec.signature_name)
        inputs = {name: tensor_proto_to_array(proto, name=name) for name, proto in request.inputs.items()}
        servable.run(signature.name, signature.check_inputs(inputs))
    elif kind in ("classify_log", "regress_log"):
        request = getattr(record, kind).request
        signature = servable.signature(request.model_spec.signature_name)
        examples = np.array(serialized_examples(request.input), dtype=object)
        servable.run(signature.name, {next(iter(signature.inputs)): examples})
    else:
        raise ServeError(f"warmup record of type `{kind}` is not supported; use predict, classify or regress logs")


def warmup_servable(servable: Servable, *, iterations: int = 1) -> int:
    """Warm ``servable``, each record ``iterations`` times (--num_request_iterations_for_warmup);
    returns the number of calls made. Raises ServeError if a record fails."""
    path = servable.path / WARMUP_FILE
    if not path.exists():
        # TF Serving runs nothing at load without warmup records: a stateful signature (its own
        # saved_model_counter test model) must answer its first request as the first call.
        return 0
    records = read_warmup_records(path)
    for index, record in enumerate(records):
        for _ in range(max(1, iterations)):
            try:
                _replay(servable, record)
            except Exception as error:
                raise ServeError(f"warmup record {index} of {path} failed: {error}") from None
    return len(records) * max(1, iterations)
