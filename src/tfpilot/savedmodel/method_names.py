"""Set TF Serving method names on a written SavedModel.

keras.export.ExportArchive writes every endpoint through tf.saved_model.save, which marks each
signature `tensorflow/serving/predict` and offers no way to change it. TF Serving only routes
:classify / :regress to signatures whose method_name says so, so the MetaGraph is rewritten in
the (temporary) version directory before verification, and fingerprint.pb is regenerated
because it holds a checksum of saved_model.pb.
"""

from __future__ import annotations

from pathlib import Path

from tfpilot import _tf_private
from tfpilot.errors import ExportError

__all__ = ["set_method_names"]


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
