"""Export: verified SavedModel versions (and, via sibling modules, TFLite and parity)."""

from tfpilot.export.saved_model import (
    ExportResult,
    export_saved_model,
    next_version,
    register_endpoint,
    register_post_write,
)
from tfpilot.export.signatures import make_logits_fn, make_serving_fn, serving_outputs
from tfpilot.export.verify import run_with_session_loader, verify_saved_model

__all__ = [
    "ExportResult",
    "export_saved_model",
    "next_version",
    "register_endpoint",
    "register_post_write",
    "make_serving_fn",
    "make_logits_fn",
    "serving_outputs",
    "verify_saved_model",
    "run_with_session_loader",
]
