"""`tfpilot data bench`: is the input pipeline fast enough for the model?

Three numbers from the same run on the same machine: the tuned pipeline's throughput (second
epoch, when the cache is warm, as in training), the naive pipeline's (sequential map, no cache,
no prefetch: what a first tf.data attempt looks like), and the model's training step rate on
batches already in memory. The verdict compares the tuned pipeline with the step rate: below
it, training waits on input. Returned as data; the CLI renders it.
"""

from __future__ import annotations

import time
from typing import Any

import tensorflow as tf

from tfpilot.findings import Finding, Severity

__all__ = ["bench_pipeline"]


def _examples_per_second(dataset: tf.data.Dataset, *, max_batches: int) -> float:
    count = 0
    start = time.perf_counter()
    for _, labels in dataset.take(max_batches):
        count += int(labels.shape[0])
    return count / max(time.perf_counter() - start, 1e-9)


def _naive(pipeline: Any) -> tf.data.Dataset:
    decode, preprocess = pipeline.source.decode, pipeline.preprocessor
    return (
        pipeline.records("train")
        .map(lambda r, y: (preprocess(decode(r)), y))
        .batch(pipeline.batch_size)
        .with_options(_no_autotune())
    )


def _no_autotune() -> tf.data.Options:
    options = tf.data.Options()
    options.autotune.enabled = False
    # TF injects a final prefetch by itself; the naive baseline has none.
    options.experimental_optimization.inject_prefetch = False
    return options


def bench_pipeline(pipeline: Any, model: Any, *, max_batches: int = 200, steps: int = 30) -> dict[str, Any]:
    """Throughputs in examples/s, their ratios, and an input-bound finding when input is slower than steps."""
    list(pipeline.train(epoch=0))  # fill the cache, as the first training epoch does
    tuned = _examples_per_second(pipeline.train(epoch=1).repeat(), max_batches=max_batches)
    naive = _examples_per_second(_naive(pipeline).repeat(), max_batches=max_batches)
    features, labels = next(iter(pipeline.train(epoch=1)))
    model.compile(
        optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False
    )
    model.train_on_batch(features, labels)  # trace once, outside the timing
    start = time.perf_counter()
    for _ in range(steps):
        model.train_on_batch(features, labels)
    step_rate = steps * int(labels.shape[0]) / max(time.perf_counter() - start, 1e-9)
    ratio = tuned / step_rate
    findings = []
    if ratio < 1.0:
        findings.append(
            Finding(
                code="DATA-INPUT-BOUND",
                severity=Severity.WARNING,
                title="input pipeline slower than the training step",
                message=f"the pipeline delivers {tuned:.0f} examples/s, the model trains on {step_rate:.0f} "
                f"examples/s: training would wait on input {100 * (1 - ratio):.0f}% of the time",
                evidence={"pipeline_per_s": tuned, "step_per_s": step_rate},
                fix="keep data.cache: memory, raise data.num_parallel_calls, store images smaller or as TFRecords",
            )
        )
    return {
        "tuned_examples_per_s": tuned,
        "naive_examples_per_s": naive,
        "step_examples_per_s": step_rate,
        "tuned_vs_naive": tuned / max(naive, 1e-9),
        "pipeline_vs_step": ratio,
        "input_bound": ratio < 1.0,
        "findings": findings,
    }
