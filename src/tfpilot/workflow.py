"""The lifecycle as functions the CLI and the Python API share: train -> evaluate -> export.

Each step reads and writes the run-directory contract, so `tfpilot evaluate RUN` and
`tfpilot export RUN` work in a fresh process from what `tfpilot train` left behind.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

from tfpilot.atomic import atomic_write_json
from tfpilot.config import RunConfig, dump_config, load_config
from tfpilot.errors import DataError
from tfpilot.findings import write_findings
from tfpilot.rundir import RunDir

__all__ = ["TrainedRun", "train_run", "load_trained", "evaluate_run", "export_run", "run", "bundled_config_path"]


@dataclasses.dataclass
class TrainedRun:
    config: RunConfig
    run: RunDir
    pipeline: Any  # tfpilot.data.Pipeline
    model: Any  # keras.Model (core: preprocessed input -> logits)


def bundled_config_path() -> Path:
    return Path(__file__).parent / "examples" / "digits.yaml"


def prepare_bundled_data(config: RunConfig) -> None:
    """The bundled example writes its PNGs on first use (scikit-learn ships the pixels)."""
    from tfpilot.data.digits import prepare_digits

    if config.data.path is not None and not (Path(config.data.path) / ".complete").exists():
        prepare_digits(config.data.path)


def load_bundled_config(*, overrides: dict[str, Any] | None = None) -> RunConfig:
    import yaml

    from tfpilot.config import config_from_dict
    from tfpilot.config.loader import set_dotted

    raw = yaml.safe_load(bundled_config_path().read_text())
    for dotted, value in (overrides or {}).items():
        set_dotted(raw, dotted, value)
    # The example's data lives under the current directory; store it absolute, as load_config
    # does, so the run's config.yaml still finds it from `tfpilot evaluate/export RUN`.
    data = raw.get("data", {})
    if isinstance(data.get("path"), str):
        data["path"] = str(Path(data["path"]).expanduser().resolve())
    config = config_from_dict(raw, source=str(bundled_config_path()))
    prepare_bundled_data(config)
    return config


def _build_pipeline(config: RunConfig, run: RunDir, *, reuse_preprocessing: bool):
    from tfpilot.data import Preprocessor, build_pipeline

    preprocessor = (
        Preprocessor.load(run.preprocessing_path) if reuse_preprocessing and run.preprocessing_path.exists() else None
    )
    pipeline = build_pipeline(
        config.data, batch_size=config.train.batch_size, seed=config.train.seed, preprocessor=preprocessor
    )
    from tfpilot.data.task import apply_saved_task

    apply_saved_task(pipeline)  # e.g. a regression run's targets, standardised with its saved statistics
    return pipeline


def train_run(config: RunConfig, *, resume: bool = False, hooks: list | None = None, **arrays: Any):
    """Train and write config.yaml, preprocessing.json, history, checkpoints, metrics.json, findings.json."""
    from tfpilot.data import build_pipeline
    from tfpilot.train import Trainer
    from tfpilot.train.strategy import is_chief, prepare_strategy

    prepare_strategy(config.train.strategy)
    run = RunDir.at(config.run_path)
    run.root.mkdir(parents=True, exist_ok=True)
    if is_chief():
        dump_config(config, run.config_path)
    if resume and run.preprocessing_path.exists():
        pipeline = _build_pipeline(config, run, reuse_preprocessing=True)
    else:
        try:
            pipeline = build_pipeline(config.data, batch_size=config.train.batch_size, seed=config.train.seed, **arrays)
        except DataError as error:
            if not error.problems:
                raise
            from tfpilot.data.bad_records import problems_report

            # The same list as the message (and as `tfpilot data inspect`), kept where the run's report goes.
            if is_chief():
                atomic_write_json(
                    run.data_report_path, problems_report(str(config.data.path), config.data.kind.value, error)
                )
            raise DataError(
                f"{error}; every problem is listed in {run.data_report_path}",
                exit_code=error.exit_code,
                problems=error.problems,
            ) from None
        from tfpilot.data.task import apply_task, check_task

        # Before anything is written or trained: a regression target must not become 214 classes.
        task = check_task(
            config.model.task,
            label_values=pipeline.source.label_values,
            num_classes=pipeline.num_classes,
            # Several labels per cell (`cat|dog`) are a CSV notion: data.csv says how they are written.
            separator=config.data.csv.label_separator if config.data.kind.value == "csv" else None,
            label_columns=config.data.csv.label_columns if config.data.kind.value == "csv" else None,
        )
        pipeline.source.findings.append(task)
        apply_task(pipeline, task.evidence["task"], config)
        if is_chief():
            pipeline.preprocessor.save(run.preprocessing_path)
            from tfpilot.data.audit import write_data_report

            write_data_report(run.data_report_path, pipeline.audit()[0])
    hooks = list(hooks or [])
    if config.train.profile_steps:
        from tfpilot.diagnose import ProfileHook

        if not any(isinstance(hook, ProfileHook) for hook in hooks):
            hooks.append(ProfileHook.from_spec(run.profile_dir, config.train.profile_steps))
    if not resume and is_chief():
        # A fresh run starts fresh findings and TensorBoard logs (old curves would overlay the new
        # ones); a resumed run keeps both. Model versions stay: they are a serving history.
        run.findings_path.unlink(missing_ok=True)
        shutil.rmtree(run.logs, ignore_errors=True)
    trainer = Trainer(config, pipeline=pipeline, run=run, hooks=hooks)

    def record_findings() -> None:
        collected = [
            *([] if resume else pipeline.findings),
            *trainer.findings,
            *(f for hook in hooks for f in getattr(hook, "findings", []) or []),
        ]
        if collected and is_chief():
            write_findings(run.findings_path, collected, append=True)

    try:
        result = trainer.fit(resume=resume)
    except BaseException:
        record_findings()
        raise
    import tensorflow as tf

    if trainer.chief:
        final = tf.train.CheckpointManager(
            tf.train.Checkpoint(model=trainer.model), str(run.final_checkpoint), max_to_keep=1
        )
        final.save()
        metrics = trainer.final_metrics()
        atomic_write_json(run.metrics_path, metrics)
        from tfpilot.monitor import compute_reference_stats, write_reference_stats

        # Training-data statistics are the reference that served traffic is compared with.
        write_reference_stats(compute_reference_stats(pipeline), run.reference_stats_path)
        record_findings()
        if not run.findings_path.exists():
            write_findings(run.findings_path, [])
    return trainer, result


def load_trained(run_path: str | Path) -> TrainedRun:
    """Rebuild the pipeline and model of a finished run from its directory."""
    # Check the directory before importing TensorFlow, so a wrong path fails in a fraction of a second.
    run = RunDir.existing(run_path)

    import tensorflow as tf

    from tfpilot.errors import ConfigError
    from tfpilot.models import build_model
    from tfpilot.train.heads import output_units

    config = load_config(run.config_path)
    latest = tf.train.latest_checkpoint(str(run.final_checkpoint))
    if latest is None:
        raise ConfigError(
            f"run `{run.root}` has no trained model (checkpoints/final is empty); finish `tfpilot train` first"
        )
    pipeline = _build_pipeline(config, run, reuse_preprocessing=True)
    from tfpilot.train.precision import precision_policy

    # Same dtype policy as in training, so evaluate/export in a new process compute as the trainer did.
    with precision_policy(config.train.mixed_precision):
        model = build_model(
            config.model,
            input_shape=pipeline.preprocessor.output_shape(),
            num_classes=output_units(pipeline.preprocessor, num_classes=pipeline.num_classes),
            vocab_size=pipeline.preprocessor.vocab_size,
        )
    tf.train.Checkpoint(model=model).restore(latest).expect_partial()
    return TrainedRun(config=config, run=run, pipeline=pipeline, model=model)


def evaluate_run(trained: TrainedRun, *, split: str = "test") -> dict[str, float]:
    """Loss and the task's metrics (accuracy; or mae/rmse in the target's units) on one split."""
    from tfpilot.train.heads import head_for

    features, labels = trained.pipeline.arrays(split)
    logits = trained.model.predict(features, batch_size=512, verbose=0)
    head = head_for(trained.pipeline.preprocessor, num_classes=trained.pipeline.num_classes, train=trained.config.train)
    return {**head.evaluate_arrays(labels, logits), "examples": int(labels.shape[0])}


def sample_features(trained: TrainedRun, *, split: str = "validation", count: int = 16) -> dict[str, Any]:
    import numpy as np

    rows = list(trained.pipeline.raw(split if trained.pipeline.num_examples(split) else "train").take(count))
    names = list(trained.pipeline.preprocessor.feature_spec)
    return {name: np.stack([features[name].numpy() for features, _ in rows]) for name in names}


def export_run(trained: TrainedRun, *, version: int | None = None, formats: list[str] | None = None) -> dict[str, Any]:
    """Export a SavedModel version (and any extra formats the export package provides)."""
    from tfpilot.export import export_saved_model

    config = trained.config
    signatures = list(config.export.signatures)
    if trained.pipeline.task == "regression":
        # TF Serving's classify method has no meaning for a numeric target; its counterpart is regress.
        signatures = list(dict.fromkeys("regress" if s == "classify" else s for s in signatures))
    result = export_saved_model(
        model=trained.model,
        preprocessor=trained.pipeline.preprocessor,
        class_names=trained.pipeline.class_names,
        base_path=trained.run.model_base,
        sample_features=sample_features(trained),
        version=version,
        signatures=signatures,
        post_write_context={"trained": trained},
    )
    summary: dict[str, Any] = {
        "saved_model": str(result.path),
        "version": result.version,
        "signatures": result.signatures,
        "max_abs_difference": result.max_abs_difference,
    }
    extra = [f for f in (formats or config.export.formats) if f != "saved_model"]
    if extra:
        from tfpilot.export.formats import export_formats

        summary["formats"] = export_formats(trained, formats=extra, saved_model_path=result.path)
    return summary


def run(config: RunConfig | str | Path | None = None, *, hooks: list | None = None) -> dict[str, Any]:
    """train -> evaluate -> export (-> report when available). Returns a summary dict."""
    if config is None:
        config = load_bundled_config()
    elif not isinstance(config, RunConfig):
        config = load_config(config)
    trainer, result = train_run(config, hooks=hooks)
    trained = TrainedRun(config=config, run=RunDir.at(config.run_path), pipeline=trainer.pipeline, model=trainer.model)
    summary: dict[str, Any] = {"run": str(trained.run.root), "epochs_run": result.epochs_run}
    summary["metrics"] = {k: v for k, v in trainer.final_metrics().items() if k != "class_names"}
    if config.export.enabled:
        summary["export"] = export_run(trained)
    from tfpilot.report import write_report

    summary["report"] = str(write_report(trained.run.root))
    return summary
