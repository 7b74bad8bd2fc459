"""Non-SavedModel formats for a trained run: TFLite variants and TF.js, each with parity.

Called by workflow.export_run after the SavedModel version is written and verified. Every
artifact is compared with that SavedModel (reloaded from disk) on the test split; the rows go
to runs/<name>/exports/parity.json. Rows outside export.parity thresholds become EXPORT-PARITY
findings appended to findings.json, and ExportParityError (exit code 1) is raised after
everything is written, so `tfpilot export` exits 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.atomic import atomic_write_bytes, atomic_write_json
from tfpilot.errors import ExportError
from tfpilot.export.parity import SavedModelRunner, TFLiteRunner, check_parity, directory_size, parity_row
from tfpilot.export.tflite import TFLITE_VARIANTS, convert_tflite, tflite_filename
from tfpilot.findings import Finding, write_findings

__all__ = ["SUPPORTED_FORMATS", "ExportParityError", "export_formats", "raw_split_features", "representative_batches"]

SUPPORTED_FORMATS = (*TFLITE_VARIANTS, "tfjs")


class ExportParityError(ExportError):
    """Artifacts were written, but some do not match the SavedModel within the thresholds."""

    def __init__(self, message: str, *, rows: list[dict[str, Any]], findings: list[Finding]) -> None:
        super().__init__(message, exit_code=1)
        self.rows = rows
        self.findings = findings


def raw_split_features(pipeline: Any, split: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Raw (client-side) features and labels of a split, in the same order as pipeline.arrays(split)."""
    rows = list(pipeline.raw(split).as_numpy_iterator())
    names = list(pipeline.preprocessor.feature_spec)
    return {name: np.stack([features[name] for features, _ in rows]) for name in names}, np.asarray(
        [label for _, label in rows]
    )


def representative_batches(pipeline: Any, *, num_batches: int):
    """int8 calibration data: the first ``num_batches`` batches of the real training pipeline (epoch 0 order)."""

    def batches():
        for index, (features, _) in enumerate(pipeline.train(epoch=0)):
            if index >= num_batches:
                break
            yield features.numpy()

    return batches


def _evaluation_split(pipeline: Any) -> str:
    for split in ("test", "validation", "train"):
        if pipeline.num_examples(split):
            return split
    raise ExportError("the run has no examples in any split to measure parity on")


def _tflite_input_note(preprocessor: Any) -> str:
    if preprocessor.kind == "image":
        return "float32 pixels scaled to [0, 1] (raw uint8 / 255); int8 files take int8 input quantized with the input tensor's scale and zero point"
    return (
        f"the preprocessed float vector of preprocessing.json ({preprocessor.kind}); string lookups and scaling stay outside "
        "the TFLite graph because string ops would need the Flex delegate, which no interpreter here has"
    )


def export_formats(trained: Any, *, formats: list[str], saved_model_path: str | Path) -> dict[str, Any]:
    """Write each format under runs/<name>/exports/, measure parity, write parity.json; see module doc."""
    unknown = [f for f in formats if f not in SUPPORTED_FORMATS]
    if unknown:
        raise ExportError(
            f"unknown export format(s) {unknown}; expected any of saved_model, {', '.join(SUPPORTED_FORMATS)}",
            exit_code=2,
        )
    config = trained.config.export
    pipeline = trained.pipeline
    if pipeline.preprocessor.kind == "text" and any(f in TFLITE_VARIANTS for f in formats):
        raise ExportError(
            f"TFLite export of a text model ({', '.join(f for f in formats if f in TFLITE_VARIANTS)}) is not supported: its serving "
            "input is a string and tokenisation/vocabulary lookup are string ops that TFLite can run only with the Flex delegate, "
            "which no interpreter here has; export `saved_model` for text models (remove tflite* from export.formats)",
            exit_code=2,
        )
    from tfpilot.data.regression import task_of
    from tfpilot.export.signatures import class_logits_model

    if task_of(pipeline.preprocessor) == "multilabel":
        raise ExportError(
            f"export format(s) {formats} of a multilabel model are not supported yet: parity compares softmax "
            "classes, and a multilabel model has independent sigmoids; export `saved_model` only",
            exit_code=2,
        )
    # A binary model's one logit z becomes the two-class logits [0, z] that parity (softmax) expects.
    core_model = class_logits_model(trained.model, pipeline.preprocessor)
    exports = trained.run.exports
    exports.mkdir(parents=True, exist_ok=True)
    split = _evaluation_split(pipeline)
    raw_features, labels = raw_split_features(pipeline, split)
    preprocessed, preprocessed_labels = pipeline.arrays(split)
    if not np.array_equal(labels, preprocessed_labels):
        raise ExportError(
            f"the raw and preprocessed `{split}` splits are not in the same order; parity cannot pair them"
        )

    reference_runner = SavedModelRunner(saved_model_path)
    reference = reference_runner.probabilities(raw_features)
    rows = [
        parity_row(
            format="saved_model",
            path=Path(saved_model_path),
            probabilities=reference,
            reference=reference,
            labels=labels,
            latency_ms_p50=reference_runner.latency_ms(raw_features),
            size_bytes=directory_size(Path(saved_model_path)),
        )
    ]
    written: dict[str, str] = {}
    input_shape = tuple(preprocessed.shape[1:])
    float_size: int | None = None
    for variant in [f for f in TFLITE_VARIANTS if f in formats]:
        content = convert_tflite(
            core_model,
            variant=variant,
            input_shape=input_shape,
            representative_batches=representative_batches(pipeline, num_batches=config.representative_batches),
        )
        path = exports / tflite_filename(variant)
        atomic_write_bytes(path, content)
        written[variant] = str(path)
        runner = TFLiteRunner(path)
        rows.append(
            parity_row(
                format=variant,
                path=path,
                probabilities=runner.probabilities(preprocessed),
                reference=reference,
                labels=labels,
                latency_ms_p50=runner.latency_ms(preprocessed),
                size_bytes=len(content),
            )
        )
        if variant == "tflite":
            float_size = len(content)
    if "tfjs" in formats:
        from tfpilot.export.tfjs import convert_tfjs, run_tfjs

        tfjs_dir = convert_tfjs(saved_model_path, exports / "tfjs")
        written["tfjs"] = str(tfjs_dir)
        result = run_tfjs(tfjs_dir, raw_features)
        rows.append(
            parity_row(
                format="tfjs",
                path=tfjs_dir,
                probabilities=result["probabilities"],
                reference=reference,
                labels=labels,
                latency_ms_p50=result["latency_ms_p50"],
            )
        )
    if any(row["format"].startswith("tflite") for row in rows):
        if float_size is None:
            # The size reduction is measured against float32 TFLite, whether or not it was asked for.
            float_size = len(convert_tflite(core_model, variant="tflite", input_shape=input_shape))
        for row in rows:
            if row["format"].startswith("tflite"):
                row["size_reduction_vs_float32"] = float_size / row["size_bytes"]
    for row in rows:
        row["latency_ratio_vs_saved_model"] = (
            row["latency_ms_p50"] / rows[0]["latency_ms_p50"] if rows[0]["latency_ms_p50"] else None
        )

    findings = check_parity(
        rows,
        max_accuracy_drop=config.parity.max_accuracy_drop,
        min_argmax_agreement=config.parity.min_argmax_agreement,
    )
    from tfpilot._tf_private import onednn_enabled
    from tfpilot.export.roundoff import onednn_roundoff_finding

    roundoff = onednn_roundoff_finding(
        rows, onednn=onednn_enabled(), failed_formats=[str(f.evidence.get("format", "")) for f in findings]
    )
    for row in rows:
        row["split"] = split
    # parity.json is a plain list of rows (schema in docs/export.md); the HTML report renders it as is.
    atomic_write_json(trained.run.parity_path, rows)
    if findings:
        everything = [*findings, *([roundoff] if roundoff else [])]
        write_findings(trained.run.findings_path, everything, append=True)
        raise ExportParityError(
            f"{len(findings)} export(s) outside the parity thresholds: {findings[0].message}; "
            f"see {trained.run.parity_path} and EXPORT-PARITY in {trained.run.findings_path}",
            rows=rows,
            findings=everything,
        )
    if roundoff is not None:
        write_findings(trained.run.findings_path, [roundoff], append=True)
    return {
        "exports": written,
        "parity_path": str(trained.run.parity_path),
        "parity": rows,
        "tflite_input": _tflite_input_note(pipeline.preprocessor),
        "findings": [roundoff] if roundoff is not None else [],
    }
