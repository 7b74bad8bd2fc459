"""tfpilot.fit against Keras model.fit on the same model and data, in the same process.

Two ratios per model and setting, each the median of interleaved rounds (fit, tfpilot.fit,
fit, tfpilot.fit, ...) so that load on the machine falls on both alike:
  * wall: the whole call, from tfpilot.fit(...) to its return (run directory, checkpoints,
    TensorBoard, the saved .keras model and sample included) over the whole model.fit(...) call;
  * steady: steps per second measured between the first and the last batch of the second epoch
    (tracing excluded), tfpilot.fit over model.fit.

Settings: the model compiled as Keras users compile it (steps_per_execution 1, jit_compile auto),
and fit at its best on this CPU for a small model (steps_per_execution 16). tfpilot.fit runs the
model's own settings, with its NaN guard on (nan_policy skip_batch).

    .venv/bin/python benchmarks/bench_fit.py [--rounds N] [--steps N] [--mirrored N]

`--mirrored N`: both build and compile the model under MirroredStrategy over N logical CPU devices
(steps_per_execution 1 only: Keras 3.15's multi-step loop fails under MirroredStrategy with two
replicas), so the guard's cost under a strategy is measured against model.fit under the same one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

BATCH = 128


def mlp() -> keras.Model:
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((784,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(10),
        ]
    )


def cnn() -> keras.Model:
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(10),
        ]
    )


class StepClock(keras.callbacks.Callback):
    """Steps per second over the second epoch (tracing happened in the first)."""

    def __init__(self) -> None:
        super().__init__()
        self.rate = 0.0

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 1:
            self._start = time.perf_counter()
            self._steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self._last_batch = batch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1:
            self.rate = (self._last_batch + 1) / (time.perf_counter() - self._start)


def one_run(
    build,
    x,
    y,
    *,
    steps_per_execution: int,
    ours: bool,
    directory: str,
    jit_compile: bool | str = "auto",
    strategy: Any = None,
) -> tuple[float, float]:
    import tfpilot

    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        model = build()
        model.compile(
            optimizer="adam",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            steps_per_execution=steps_per_execution,
            jit_compile=jit_compile,
        )
    clock = StepClock()
    start = time.perf_counter()
    if ours:
        tfpilot.fit(
            model,
            x,
            y,
            batch_size=BATCH,
            epochs=2,
            callbacks=[clock],
            name="bench",
            runs_dir=directory,
            nan_policy="skip_batch",
        )
    else:
        model.fit(x, y, batch_size=BATCH, epochs=2, callbacks=[clock], verbose=0)
    return time.perf_counter() - start, clock.rate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300, help="steps per epoch (two epochs per run)")
    parser.add_argument(
        "--jit",
        action="store_true",
        help="compile both with jit_compile=True (XLA; 'auto' means no XLA on a machine without a GPU)",
    )
    parser.add_argument("--mirrored", type=int, default=0, help="MirroredStrategy over N logical CPU devices")
    args = parser.parse_args()
    strategy = None
    if args.mirrored:
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * args.mirrored)
        strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(args.mirrored)])
    rng = np.random.default_rng(0)
    rows = args.steps * BATCH
    data = {
        "mlp": (mlp, rng.random((rows, 784), dtype=np.float32), rng.integers(0, 10, rows)),
        "cnn": (cnn, rng.random((rows // 4, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, rows // 4)),
    }
    jit: bool | str = True if args.jit else "auto"
    with tempfile.TemporaryDirectory() as directory:
        for name, (build, x, y) in data.items():
            for steps_per_execution in (1,) if strategy is not None else (1, 16):
                walls, rates = [], []
                for _ in range(args.rounds):
                    fit_wall, fit_rate = one_run(
                        build,
                        x,
                        y,
                        steps_per_execution=steps_per_execution,
                        ours=False,
                        directory=directory,
                        jit_compile=jit,
                        strategy=strategy,
                    )
                    our_wall, our_rate = one_run(
                        build,
                        x,
                        y,
                        steps_per_execution=steps_per_execution,
                        ours=True,
                        directory=directory,
                        jit_compile=jit,
                        strategy=strategy,
                    )
                    walls.append(our_wall / fit_wall)
                    rates.append(our_rate / fit_rate)
                print(
                    f"{name}{' mirrored ' + str(args.mirrored) if strategy else ''} spe{steps_per_execution:<3} "
                    f"jit {jit} steps/epoch {len(x) // BATCH:>4}: "
                    f"wall tfpilot.fit/model.fit {statistics.median(walls):.3f}x "
                    f"(rounds {', '.join(f'{w:.3f}' for w in walls)}); "
                    f"steady steps/s {statistics.median(rates):.3f}x (rounds {', '.join(f'{r:.3f}' for r in rates)})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
