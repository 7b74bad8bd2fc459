"""Set TF Serving method names on a written SavedModel.

keras.export.ExportArchive writes every endpoint through tf.saved_model.save, which marks each
signature `tensorflow/serving/predict` and offers no way to change it. TF Serving only routes
:classify / :regress to signatures whose method_name says so, so the MetaGraph is rewritten in
the (temporary) version directory before verification, and fingerprint.pb is regenerated
because it holds a checksum of saved_model.pb.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tfpilot import _tf_private
from tfpilot.errors import ExportError

__all__ = ["set_method_names", "read_signature_defs", "parse_saved_model"]


def parse_saved_model(path: str | Path) -> Any:
    """The SavedModel proto of a version directory, from saved_model.pb or saved_model.pbtxt.

    The one reader that export and serve share: TF Serving accepts either file.
    """
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


def set_method_names(path: str | Path, method_names: dict[str, str]) -> None:
    """Rewrite signature_def[name].method_name for each entry, then refresh fingerprint.pb."""
    from tensorflow.core.protobuf import saved_model_pb2

    fingerprinting_utils = _tf_private.fingerprinting_utils()

    if not method_names:
        return
    pb_path = Path(path) / "saved_model.pb"
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString(pb_path.read_bytes())
    changed = False
    for meta_graph in saved_model.meta_graphs:
        for name, method in method_names.items():
            if name not in meta_graph.signature_def:
                raise ExportError(
                    f"signature `{name}` is missing from `{pb_path}`; cannot set its method name to {method}"
                )
            if meta_graph.signature_def[name].method_name != method:
                meta_graph.signature_def[name].method_name = method
                changed = True
    if changed:
        pb_path.write_bytes(saved_model.SerializeToString())
        if (Path(path) / "fingerprint.pb").exists():
            fingerprinting_utils.write_fingerprint(str(path))
