"""SavedModel versions on disk, shared by export, serve, monitor and the run directory.

A version directory is the contract between the package that writes it and the ones that read
it, so what a version is lives here once: listing versions and choosing the next (`versions`),
reading the MetaGraph and its SignatureDefs (`metagraph`), setting TF Serving method names
(`method_names`), warmup records (`warmup`), calling a signature over many examples in batches
(`signature_call`) and writing a version that appears only once verified (`write`). It sits
below export and serve: serve reads models through it and never imports export. Importing it
loads no TensorFlow; the functions that need it import it when called.
"""

from tfpilot.savedmodel.metagraph import parse_saved_model, read_signature_defs
from tfpilot.savedmodel.method_names import set_method_names
from tfpilot.savedmodel.signature_call import SignatureCaller
from tfpilot.savedmodel.versions import (
    MAX_VERSION,
    is_complete_version,
    latest_version_dir,
    next_version,
    scan_versions,
    version_numbers,
)
from tfpilot.savedmodel.warmup import MAX_WARMUP_RECORDS, WARMUP_PATH, read_warmup_records, write_warmup_records
from tfpilot.savedmodel.write import claim_version, write_verified_version

__all__ = [
    "MAX_VERSION",
    "scan_versions",
    "version_numbers",
    "next_version",
    "latest_version_dir",
    "is_complete_version",
    "parse_saved_model",
    "read_signature_defs",
    "set_method_names",
    "WARMUP_PATH",
    "MAX_WARMUP_RECORDS",
    "read_warmup_records",
    "write_warmup_records",
    "SignatureCaller",
    "claim_version",
    "write_verified_version",
]
