"""Export benchmark: batch-1 latency of each TFLite variant relative to the SavedModel, one run.

The anchor is the SavedModel's serving_default (reloaded from disk, raw uint8 input, preprocessing
inside), measured in the same process right before the TFLite files, so the printed ratios are
comparable across machines; absolute times are shown only for context.

    .venv/bin/python benchmarks/bench_export.py [--quick] [--run runs/digits]

Without --run it trains the bundled example's MLP (256-128) on the 8x8 digits arrays in a
temporary run directory.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FORMATS = ["tflite", "tflite-dynamic", "tflite-int8", "tflite-fp16"]


def _fresh_run(root: Path, *, epochs: int):
    import keras
    import numpy as np
    from sklearn.datasets import load_digits

    from tfpilot.config import RunConfig, dump_config
    from tfpilot.config.schema import DataConfig
    from tfpilot.data import build_pipeline
    from tfpilot.rundir import RunDir
    from tfpilot.workflow import TrainedRun

    keras.utils.set_random_seed(0)
    digits = load_digits()
    images = np.clip(digits.images * 16, 0, 255).astype(np.uint8)[..., None]
    config = RunConfig(name="bench_export", runs_dir=root, data=DataConfig(kind="arrays"))
    pipeline = build_pipeline(config.data, batch_size=64, seed=0, features=images, labels=digits.target)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Flatten(),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10, name="logits"),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.002), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )
    x, y = pipeline.arrays("train")
    model.fit(x, y, epochs=epochs, batch_size=64, verbose=0)
    run = RunDir.at(config.run_path)
    run.root.mkdir(parents=True, exist_ok=True)
    dump_config(config, run.config_path)
    return TrainedRun(config=config, run=run, pipeline=pipeline, model=model)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer training epochs and latency runs")
    parser.add_argument("--run", type=Path, help="use this trained run (its exports/ are rewritten in a copy)")
    args = parser.parse_args(argv)

    import shutil

    from tfpilot.export import parity
    from tfpilot.export.formats import export_formats
    from tfpilot.workflow import export_run, load_trained

    if args.quick:
        parity.LATENCY_RUNS = 50
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        if args.run:
            copy = Path(tmp) / args.run.name
            shutil.copytree(args.run, copy, ignore=shutil.ignore_patterns("model", "exports", "logs"))
            trained = load_trained(copy)
        else:
            trained = _fresh_run(Path(tmp), epochs=2 if args.quick else 8)
        trained.config.export.signatures = ["serving_default"]
        summary = export_run(trained)
        rows = export_formats(trained, formats=FORMATS, saved_model_path=summary["saved_model"])["parity"]
    anchor = rows[0]
    print(
        f"anchor: SavedModel serving_default batch-1 p50 = {anchor['latency_ms_p50']:.3f} ms (accuracy {anchor['accuracy']:.4f})"
    )
    print(
        f"{'format':<16}{'latency / SavedModel':>22}{'speedup':>10}{'size / float32':>16}{'agreement':>11}{'acc drop':>10}"
    )
    for row in rows[1:]:
        ratio = row["latency_ms_p50"] / anchor["latency_ms_p50"]
        size = 1.0 / row["size_reduction_vs_float32"]
        print(
            f"{row['format']:<16}{ratio:>22.4f}{1 / ratio:>9.1f}x{size:>16.3f}{row['argmax_agreement']:>11.4f}{row['accuracy_drop']:>10.4f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
