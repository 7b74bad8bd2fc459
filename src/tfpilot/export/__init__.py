"""Export: verified SavedModel versions (serving_default, logits, classify, regress), warmup records,
a model contract, the .keras archive, TFLite variants and TF.js with parity."""

import tfpilot.export.image_bytes  # noqa: F401  (registers the image_bytes signature)
from tfpilot.export.contract import CONTRACT_FILENAME, build_contract, check_contract, contract_hook, read_contract
from tfpilot.export.keras_archive import keras_archive_hook, unserializable_layers, write_keras_archive
from tfpilot.export.parity import PARITY_CODE, SavedModelRunner, TFLiteRunner, check_parity, parity_row
from tfpilot.export.saved_model import (
    ExportResult,
    export_saved_model,
    register_endpoint,
    register_post_write,
)
from tfpilot.export.signatures import (
    CLASSIFY_METHOD,
    PREDICT_METHOD,
    REGRESS_METHOD,
    example_parsing_spec,
    make_classify_fn,
    make_logits_fn,
    make_regress_fn,
    make_serving_fn,
    serving_outputs,
)
from tfpilot.export.tf_example import to_examples
from tfpilot.export.tflite import TFLITE_VARIANTS, convert_tflite, tflite_filename
from tfpilot.export.verify import (
    run_with_session_loader,
    verify_saved_model,
    verify_serving_methods,
    verify_warmup_records,
)
from tfpilot.export.warmup import build_warmup_records, warmup_hook

# What a version directory is (its number, MetaGraph, method names, warmup file) belongs to
# tfpilot.savedmodel, which the server shares; export's public names for it stay as they were.
from tfpilot.savedmodel import (
    WARMUP_PATH,
    next_version,
    read_signature_defs,
    read_warmup_records,
    set_method_names,
    write_warmup_records,
)

# Built-in post-write hooks, in order: the .keras archive first (fails fast on unserialisable
# layers), then warmup records, then the contract (which describes the finished directory).
register_post_write(keras_archive_hook)
register_post_write(warmup_hook)
register_post_write(contract_hook)

__all__ = [
    "ExportResult",
    "export_saved_model",
    "next_version",
    "register_endpoint",
    "register_post_write",
    "make_serving_fn",
    "make_logits_fn",
    "make_classify_fn",
    "make_regress_fn",
    "example_parsing_spec",
    "serving_outputs",
    "PREDICT_METHOD",
    "CLASSIFY_METHOD",
    "REGRESS_METHOD",
    "verify_saved_model",
    "verify_serving_methods",
    "verify_warmup_records",
    "run_with_session_loader",
    "read_signature_defs",
    "set_method_names",
    "to_examples",
    "CONTRACT_FILENAME",
    "build_contract",
    "check_contract",
    "contract_hook",
    "read_contract",
    "WARMUP_PATH",
    "build_warmup_records",
    "write_warmup_records",
    "read_warmup_records",
    "warmup_hook",
    "unserializable_layers",
    "write_keras_archive",
    "keras_archive_hook",
    "TFLITE_VARIANTS",
    "convert_tflite",
    "tflite_filename",
    "PARITY_CODE",
    "TFLiteRunner",
    "SavedModelRunner",
    "parity_row",
    "check_parity",
]
