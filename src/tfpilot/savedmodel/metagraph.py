"""Reading a version's saved_model.pb (or .pbtxt): the MetaGraphs and their SignatureDefs.

TF Serving accepts either file; export (contract, verification) and the server (signatures of
someone else's model) read it through this one reader, so both see the same SignatureDefs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tfpilot.errors import ExportError

__all__ = ["parse_saved_model", "read_signature_defs"]


def parse_saved_model(path: str | Path) -> Any:
    """The SavedModel proto of a version directory, from saved_model.pb or saved_model.pbtxt."""
    from google.protobuf import text_format
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel()
    binary, text = Path(path) / "saved_model.pb", Path(path) / "saved_model.pbtxt"
    try:
        if binary.exists():
            saved_model.ParseFromString(binary.read_bytes())
        else:
            text_format.Parse(text.read_text(encoding="utf-8"), saved_model)
    except Exception as error:  # DecodeError, ParseError, OSError: all mean "not a SavedModel"
        raise ExportError(f"{path} does not hold a readable saved_model.pb: {error}") from None
    return saved_model


def read_signature_defs(path: str | Path, *, any_meta_graph: bool = False) -> dict[str, Any]:
    """signature name -> SignatureDef of the `serve` MetaGraph in ``path``.

    any_meta_graph: fall back to the first MetaGraph when none is tagged `serve` (what a server
    loading someone else's model does; an export of tfpilot's own must have the tag).
    """
    saved_model = parse_saved_model(path)
    for meta_graph in saved_model.meta_graphs:
        if "serve" in meta_graph.meta_info_def.tags:
            return dict(meta_graph.signature_def)
    if any_meta_graph and saved_model.meta_graphs:
        return dict(saved_model.meta_graphs[0].signature_def)
    if not saved_model.meta_graphs:
        raise ExportError(f"{path}/saved_model.pb has no meta graph")
    raise ExportError(f"SavedModel at `{path}` has no MetaGraph tagged `serve`; TF Serving cannot load it")
