"""Training throughput: tfpilot's trainer vs Keras model.fit, a hand-written tf.function loop and
eager execution, for an MLP (784-256-256-10) and a small CNN, on synthetic in-memory data.

Every number is printed as a ratio against an anchor measured in the same process:
  * steps/s ratios against the hand-written tf.function loop (and tfpilot / fit);
  * achieved GFLOP/s as a fraction of a large float32 matmul's GFLOP/s (the machine's practical
    peak for this process).

Steady state only: each approach's first call (tracing) is excluded. tfpilot is timed through
Trainer.fit with a hook that stamps every compiled call, so the number includes everything the
outer loop does per call (host sync, hooks, NaN flags, preemption check).

    .venv/bin/python benchmarks/bench_train.py [--quick] [--rounds N]

The anchor for tfpilot is Keras fit at its best setting (steps_per_execution 16, with and without
XLA), same model, data and batch; tfpilot runs with its defaults (`auto` steps_per_execution and
jit_compile, chosen by timing whole steps). The NaN guard's cost is the same compiled step with
and without the guard, interleaved.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

BATCH = 128


def model_flops_per_example(model: keras.Model) -> float:
    """Forward FLOPs per example from Dense and Conv2D shapes (2 per multiply-add)."""
    flops = 0.0
    for layer in model._flatten_layers(include_self=False):  # noqa: SLF001
        if isinstance(layer, keras.layers.Dense):
            flops += 2.0 * layer.kernel.shape[0] * layer.kernel.shape[1]
        elif isinstance(layer, keras.layers.Conv2D):
            height, width, out_channels = layer.output.shape[1:]
            kh, kw, in_channels, _ = layer.kernel.shape
            flops += 2.0 * height * width * out_channels * kh * kw * in_channels
    return flops


def matmul_gflops(size: int = 2048, repeats: int = 10, *, dependent: bool = True) -> float:
    """GFLOP/s of `repeats` float32 size x size matmuls in one tf.function.

    The operands must differ: ten identical `tf.matmul(a, b)` are one matmul after grappler's
    common-subexpression elimination and read 10x too high. `dependent`: a chain where each product
    feeds the next (nothing can run in parallel or be merged); otherwise independent products of
    distinct operands (what inter-op parallelism can overlap)."""
    a = tf.random.normal([size, size])
    bs = [tf.random.normal([size, size]) / size**0.5 for _ in range(repeats)]

    @tf.function
    def chain(a, bs):
        out = a
        for b in bs:
            out = tf.matmul(out, b)
        return tf.reduce_sum(out)

    @tf.function
    def independent(a, bs):
        return tf.add_n([tf.reduce_sum(tf.matmul(a, b)) for b in bs])

    run = chain if dependent else independent
    run(a, bs).numpy()
    start = time.perf_counter()
    run(a, bs).numpy()
    return 2.0 * size**3 * repeats / (time.perf_counter() - start) / 1e9


def make_config(kind: str, runs: str, *, steps_per_execution: int | None):
    from tfpilot.config import config_from_dict

    model = (
        {"name": "mlp", "hidden_units": [256, 256], "dropout": 0.0}
        if kind == "mlp"
        else {"name": "cnn", "filters": [16, 32], "hidden_units": [], "dropout": 0.0}
    )
    return config_from_dict(
        {
            "name": f"bench-{kind}",
            "runs_dir": runs,
            "data": {"kind": "arrays", "shuffle_buffer": 0, "split": {"validation": 0.0, "test": 0.0}},
            "model": model,
            "train": {
                "epochs": 1,
                "batch_size": BATCH,
                "clip_norm": None,
                "early_stopping": None,
                "histogram_every_epochs": 0,
                "summary_every_steps": 10_000,
                "strategy": "default",
                # None = tfpilot's own default (what a user gets without setting it).
                **({} if steps_per_execution is None else {"steps_per_execution": steps_per_execution}),
            },
            "export": {"enabled": False},
        },
        source="<bench>",
    )


def synthetic(kind: str, num_examples: int):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, num_examples).astype(np.int32)
    if kind == "mlp":
        return rng.normal(size=(num_examples, 784)).astype(np.float32), labels
    return rng.integers(0, 256, (num_examples, 28, 28, 1)).astype(np.uint8), labels


def fresh_model(config, pipeline) -> keras.Model:
    from tfpilot.models import build_model

    keras.utils.set_random_seed(0)
    return build_model(config.model, input_shape=pipeline.preprocessor.output_shape(), num_classes=10)


def dataset(pipeline) -> tf.data.Dataset:
    return pipeline.train(epoch=0)


def loss_fn(labels, logits):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def bench_tfpilot(config, pipeline, steps: int) -> float:
    from tfpilot.train import Trainer, TrainHook

    class Stamps(TrainHook):
        def __init__(self):
            self.stamps: list[tuple[int, float]] = []

        def after_execution(self, *, step, steps_run):
            self.stamps.append((step, time.perf_counter()))

    stamps = Stamps()
    trainer = Trainer(config, pipeline=pipeline, hooks=[stamps])
    CHOICES.append(trainer.step_choice.describe())
    trainer.fit()
    (first_step, first_time), (last_step, last_time) = stamps.stamps[0], stamps.stamps[-1]
    return (last_step - first_step) / (last_time - first_time)


CHOICES: list[str] = []  # what `auto` chose in each tfpilot run (printed with the results)


def bench_guard(config, pipeline, steps: int) -> dict[str, float]:
    """Steps/s of tfpilot's compiled step with and without the NaN guard and gradient-norm logging,
    at the settings tfpilot chose, interleaved in one process (the ratio is the guard's cost)."""
    from tfpilot.train.step import StepFunctions

    class Unguarded(StepFunctions):
        """The same step without the finiteness check, the cond and the norm (what fit runs)."""

        def _single_step(self, features, labels, *, with_norm=True):
            _, logits, per_example, gradients = self.loss_and_gradients(features, labels)
            self.optimizer.apply(gradients, self.model.trainable_variables)
            self._update_metrics(labels, logits, per_example)
            return tf.constant(0.0), tf.constant(True)

    jit = "XLA on" in CHOICES[-1]
    spe = int(CHOICES[-1].split("steps_per_execution ")[1].split(",")[0])
    batches = dataset(pipeline).repeat()
    runs = {}
    for name, cls in (("guarded", StepFunctions), ("unguarded", Unguarded)):
        step_functions = cls(
            model=fresh_model(config, pipeline),
            optimizer=keras.optimizers.Adam(1e-3),
            strategy=tf.distribute.get_strategy(),
            clip_norm=None,
            l2=0.0,
            label_smoothing=0.0,
            num_classes=10,
            steps_per_execution=spe,
            jit_compile=jit,
            # As the trainer builds it: under XLA a call's batches are stacked into one XLA loop.
            batch_size=BATCH,
        )
        iterator = iter(batches)
        step_functions.train_function(iterator, tf.constant(spe, tf.int64)).numpy()
        runs[name] = (step_functions.train_function, iterator)
    best = dict.fromkeys(runs, 0.0)
    # Every round runs the whole step budget per variant: shorter windows read load bursts as cost.
    calls = max(1, steps // spe)
    for _ in range(4):
        for name, (function, iterator) in runs.items():
            start = time.perf_counter()
            for _ in range(calls):
                out = function(iterator, tf.constant(spe, tf.int64))
            out.numpy()
            best[name] = max(best[name], calls * spe / (time.perf_counter() - start))
    return best


def bench_fit(model, pipeline, steps: int, *, steps_per_execution: int = 1, jit_compile: bool | str = False) -> float:
    """model.fit's steady-state steps/s. With steps_per_execution, Keras calls the batch hook once per
    execution with the index of its last step, so steps are counted from the indices, not the calls."""

    class Stamps(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.stamps: list[tuple[int, float]] = []

        def on_train_batch_end(self, batch, logs=None):
            self.stamps.append((batch, time.perf_counter()))

    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
        jit_compile=jit_compile,
    )
    stamps = Stamps()
    model.fit(dataset(pipeline), epochs=1, steps_per_epoch=steps, verbose=0, callbacks=[stamps])
    (first_step, first_time), (last_step, last_time) = stamps.stamps[0], stamps.stamps[-1]
    return (last_step - first_step) / (last_time - first_time)


def _train_step(model, optimizer):
    def step(features, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(features, training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(gradients, model.trainable_variables)
        return loss

    return step


def bench_function(model, pipeline, steps: int) -> float:
    optimizer = keras.optimizers.Adam(1e-3)
    step = tf.function(_train_step(model, optimizer))
    iterator = iter(dataset(pipeline).repeat())
    step(*next(iterator)).numpy()
    start = time.perf_counter()
    for _ in range(steps):
        loss = step(*next(iterator))
    loss.numpy()
    return steps / (time.perf_counter() - start)


def bench_eager(model, pipeline, steps: int) -> float:
    optimizer = keras.optimizers.Adam(1e-3)
    step = _train_step(model, optimizer)
    iterator = iter(dataset(pipeline).repeat())
    step(*next(iterator))
    start = time.perf_counter()
    for _ in range(steps):
        step(*next(iterator))
    return steps / (time.perf_counter() - start)


def measure_all(config, pipeline, steps: int, *, rounds: int) -> dict[str, float]:
    approaches = {
        "tfpilot": lambda: bench_tfpilot(config, pipeline, steps),
        "fit": lambda: bench_fit(fresh_model(config, pipeline), pipeline, steps),
        "fit spe16": lambda: bench_fit(fresh_model(config, pipeline), pipeline, steps, steps_per_execution=16),
        "fit spe16+xla": lambda: bench_fit(
            fresh_model(config, pipeline), pipeline, steps, steps_per_execution=16, jit_compile=True
        ),
        "tf.function": lambda: bench_function(fresh_model(config, pipeline), pipeline, steps),
        "eager": lambda: bench_eager(fresh_model(config, pipeline), pipeline, max(10, steps // 20)),
    }
    # Interleaved rounds, best of each: load from elsewhere on the machine slows every
    # approach in turn rather than whichever happened to run while it lasted.
    rates = dict.fromkeys(approaches, 0.0)
    for _ in range(rounds):
        for name, measure in approaches.items():
            rates[name] = max(rates[name], measure())
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps (< 2 minutes)")
    parser.add_argument(
        "--steps-per-execution", type=int, default=None, help="tfpilot's setting (default: tfpilot's own default)"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="measure every approach this many times, interleaved; keep each best"
    )
    parser.add_argument(
        "--models", default="mlp,cnn", help="comma-separated subset of mlp,cnn (one model: longer rounds per minute)"
    )
    args = parser.parse_args()
    from tfpilot.data import build_pipeline

    peak = matmul_gflops(dependent=True)
    independent = matmul_gflops(dependent=False)
    print(
        f"anchor: 2048x2048 float32 matmul = {peak:.1f} GFLOP/s (chain of dependent products; "
        f"independent products of distinct operands: {independent:.1f} = {independent / peak:.2f}x) in this process"
    )
    with tempfile.TemporaryDirectory() as runs:
        models = (("mlp", 200 if args.quick else 1500), ("cnn", 40 if args.quick else 600))
        for kind, steps in (model for model in models if model[0] in args.models.split(",")):
            config = make_config(kind, runs, steps_per_execution=args.steps_per_execution)
            features, labels = synthetic(kind, steps * BATCH)
            pipeline = build_pipeline(config.data, batch_size=BATCH, features=features, labels=labels)
            for _ in pipeline.train(epoch=0):
                pass  # warm the in-memory cache so no approach pays for the first pass
            rates = measure_all(config, pipeline, steps, rounds=args.rounds)
            guard = bench_guard(config, pipeline, steps)
            flops_per_step = 3.0 * model_flops_per_example(fresh_model(config, pipeline)) * BATCH
            setting = "default" if args.steps_per_execution is None else args.steps_per_execution
            print(f"\n{kind} (batch {BATCH}, tfpilot steps_per_execution={setting}):")
            best_fit = max(("fit", "fit spe16", "fit spe16+xla"), key=lambda name: rates[name])
            for name, rate in rates.items():
                gflops = rate * flops_per_step / 1e9
                print(
                    f"  {name:14s} {rate:8.1f} steps/s  x{rate / rates['tf.function']:.2f} vs tf.function  "
                    f"{gflops:6.1f} GFLOP/s = {gflops / peak:.1%} of matmul"
                )
            print(
                f"  tfpilot / best fit ({best_fit}) = {rates['tfpilot'] / rates[best_fit]:.2f}x (aim >= 1.0)   "
                f"tfpilot / plain fit = {rates['tfpilot'] / rates['fit']:.2f}x   "
                f"tfpilot / tf.function = {rates['tfpilot'] / rates['tf.function']:.2f}x (aim >= 0.95)   "
                f"tfpilot / eager = {rates['tfpilot'] / rates['eager']:.1f}x"
            )
            print(f"  tfpilot chose: {' | '.join(dict.fromkeys(CHOICES))}")
            CHOICES.clear()
            print(
                f"  NaN guard + gradient norm: {guard['guarded']:.1f} vs {guard['unguarded']:.1f} steps/s without = "
                f"{1 - guard['guarded'] / guard['unguarded']:+.1%} cost (aim <= 3%)"
            )


if __name__ == "__main__":
    main()
