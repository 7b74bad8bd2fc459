"""What tfpilot.fit's NaN guard costs per step, part by part, in one process.

Each variant is one model compiled the same way and trained with Keras' own `model.fit`; the guard
parts are put in place as tfpilot.fit puts them (guarded_step.py):
  * plain: model.fit as is;
  * wrap: the guarded train_step (state read before the step, the good/bad cond after it);
  * install: only the optimizer's guarded apply (the finiteness check and the cond around the update);
  * full: both (what tfpilot.fit runs at one step per call);
  * deferred: the guard checked once per call, a bad call run again through `full`'s step
    (deferred_loop.py; what tfpilot.fit runs at several steps per call).
After one warm-up epoch each (tracing, XLA compilation), the variants train one epoch in turn,
`--rounds` times, on the same cached dataset; the ratio is plain's epoch time over the variant's
(above 1.0 = faster than plain), from the fastest epoch of each and as the median of the rounds'
pairwise ratios (load on the machine falls on neighbours alike).

    .venv/bin/python benchmarks/bench_fit_guard.py [--model mlp|cnn] [--jit] [--spe N] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench_fit import BATCH, cnn, mlp  # noqa: E402
from tfpilot.train.fit.deferred_loop import DeferredLoop  # noqa: E402
from tfpilot.train.fit.guarded_step import GuardedStep  # noqa: E402

VARIANTS = ("plain", "wrap", "install", "full", "deferred")


class EpochClock(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self._start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    parser.add_argument("--jit", action="store_true", help="jit_compile=True (XLA) for every variant")
    parser.add_argument("--spe", type=int, default=16, help="steps_per_execution")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=200, help="steps per epoch")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, plain always")
    args = parser.parse_args()
    build = mlp if args.model == "mlp" else cnn
    rng = np.random.default_rng(0)
    rows = args.steps * BATCH
    shape = (rows, 784) if args.model == "mlp" else (rows, 28, 28, 1)
    data = tf.data.Dataset.from_tensor_slices((rng.random(shape, dtype=np.float32), rng.integers(0, 10, rows)))
    data = data.batch(BATCH).cache()

    models = {}
    chosen = ["plain", *(v for v in args.variants.split(",") if v in VARIANTS and v != "plain")]
    for variant in chosen:
        model = build()
        model.compile(
            optimizer="adam",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            steps_per_execution=args.spe,
            jit_compile=args.jit,
        )
        guard = GuardedStep(model)
        own_step = model.train_step
        if variant in ("wrap", "full", "deferred"):
            model.train_step = guard.wrap(own_step, keep_batch=not args.jit)
        if variant in ("install", "full", "deferred"):
            guard.install()
        if variant == "deferred":
            model.make_train_function()
            model.train_function = DeferredLoop(model, guard, guard.check_step(own_step), model.train_function)
        model.fit(data, epochs=1, verbose=0)  # warm-up: tracing and compilation
        models[variant] = model
    seconds: dict[str, list[float]] = {variant: [] for variant in chosen}
    clock = EpochClock()
    for _ in range(args.rounds):
        for variant, model in models.items():
            model.fit(data, epochs=1, verbose=0, callbacks=[clock])
            seconds[variant].append(clock.seconds)
    plain = seconds["plain"]
    for variant in chosen:
        pairwise = [p / v for p, v in zip(plain, seconds[variant], strict=True)]
        print(
            f"{args.model} spe{args.spe} jit={args.jit} {variant:8s} fastest epoch {min(seconds[variant]) * 1000:7.1f} ms; "
            f"speed vs plain: fastest {min(plain) / min(seconds[variant]):.3f}, median of rounds {statistics.median(pairwise):.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
