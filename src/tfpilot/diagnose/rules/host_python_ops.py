"""DOC-HOST-PYTHON-OP: EagerPyFunc / PyFunc (py_function, numpy_function, from_generator) in the step or the pipeline.

Where the op runs decides what it costs:

- inside the training step's graph (the watcher finds it in the tf.function's traced graphs), the
  step waits for every call: its self time per step over the step time is the share, info from 1%,
  warning from 5% (rules.base.MATERIAL_PERCENT), error from 20%;
- in the input pipeline (a tf.data map, or ``from_generator``'s generator), it runs in tf.data's
  background threads. Their time adds up across threads (it can exceed the step time) and costs the
  step nothing while the pipeline keeps up. It is an error or warning only when the step really
  waits for input (DOC-INPUT-BOUND's evidence, at that rule's severity); otherwise it is info.

A py_function that sleeps, does I/O or calls NumPy releases the GIL, so ``num_parallel_calls`` runs
it in parallel (the data_performance guide's fix); ``from_generator`` is one Python generator that
no map option parallelises, only interleaving several of them does.
"""

from __future__ import annotations

from typing import Any

from tfpilot.diagnose.rules import input_bound
from tfpilot.diagnose.rules.base import Observations, severity_for_share
from tfpilot.findings import Finding, Severity

CODE = "DOC-HOST-PYTHON-OP"
MIN_SHARE_PERCENT = 1.0
HIGH_SHARE_PERCENT = 20.0

_GENERATOR_FIX = (
    "from_generator runs one Python generator in one thread (num_parallel_calls on a later map does not help): "
    "split the source into shards and interleave(lambda shard: from_generator(..., args=(shard,)), "
    "num_parallel_calls=tf.data.AUTOTUNE), end with .prefetch(tf.data.AUTOTUNE), cache() if the data repeats, "
    "or write it to TFRecord once"
)


def _map_fix(facts: input_bound.PipelineFacts) -> str:
    """Parallelise / cache / prefetch the map that calls Python, leaving out what the pipeline already does."""
    steps = [input_bound.python_op_advice(facts)]
    if not (facts.parallel_map and not facts.sequential_map):
        steps[0] = (
            "pass num_parallel_calls=tf.data.AUTOTUNE to the map that calls the py_function/numpy_function (one that "
            "sleeps, does I/O or calls NumPy releases the GIL and runs in parallel; pure-Python loops do not, rewrite "
            "those with TF ops)"
        )
    if not facts.cached:
        # A py_function is stateful: TensorFlow cannot know its output repeats, and caching a random one freezes it.
        steps.append(
            input_bound.cache_advice(facts)
            if facts.changing_map
            else "cache() after it if its output repeats (not if it draws random numbers)"
        )
    if not facts.prefetched:
        steps.append("end with .prefetch(tf.data.AUTOTUNE)")
    return "; ".join(steps)


_STEP_FIX = (
    "the training step itself calls a py_function/numpy_function, so every step waits for Python: move it into the "
    "input pipeline (a map with num_parallel_calls) or rewrite it with TF ops so it runs in the graph"
)


def _in_step(observations: Observations) -> list[str]:
    """Python op types found in the graphs of the repeatedly called tf.functions."""
    watch = observations.watch
    if watch is None:
        return []
    return sorted({op for f in watch.functions if f.calls >= 2 for op in f.python_ops})


def _from_generator(observations: Observations) -> bool:
    summary = observations.summary
    return bool(summary and any(s.stage == "Generator" for s in summary.input_stages))


def check(observations: Observations) -> list[Finding]:
    summary = observations.summary
    if summary is None or not summary.host_python_ops or not summary.steps.step_ms:
        return []
    steps = summary.captured_steps
    step_ms = summary.steps.step_ms
    per_step_ms = sum(op.total_self_time_ms for op in summary.host_python_ops) / steps
    share = 100.0 * per_step_ms / step_ms
    if share < MIN_SHARE_PERCENT:
        return []
    calls = sum(op.occurrences for op in summary.host_python_ops) / steps
    kinds = sorted({op.type for op in summary.host_python_ops})
    in_step = _in_step(observations)
    generator = _from_generator(observations)
    evidence: dict[str, Any] = {
        "op_types": kinds,
        "ms_per_step": round(per_step_ms, 2),
        "share_of_step_percent": round(min(share, 999.0), 1),
        "calls_per_step": round(calls, 1),
        "ms_per_call": round(per_step_ms / calls if calls else 0.0, 2),
        "step_ms": round(step_ms, 2),
        "where": "step" if in_step else "pipeline",
        "source": "from_generator" if generator and not in_step else ("py_function" if in_step else "map"),
    }
    if in_step:
        # Measured cost decides: info below MATERIAL_PERCENT (5%) of the step, error from HIGH_SHARE_PERCENT.
        severity = severity_for_share(share, error_percent=HIGH_SHARE_PERCENT)
        message = (
            f"{'/'.join(in_step)} in the training step ran {calls:.1f} times per step for {per_step_ms:.1f} ms per step "
            f"({share:.1f}% of the {step_ms:.1f} ms step); the step waits for each call"
        )
        fix = _STEP_FIX
    else:
        bound = input_bound.check(observations)
        what = "from_generator's generator" if generator else f"{'/'.join(kinds)} in the input pipeline"
        message = (
            f"{what} ran {calls:.1f} times per step, {per_step_ms:.1f} ms of Python per {step_ms:.1f} ms step "
            "summed over tf.data's threads"
        )
        fix = _GENERATOR_FIX if generator else _map_fix(input_bound.pipeline_facts(observations))
        if bound:
            severity = bound[0].severity
            evidence["input_percent"] = bound[0].evidence["input_percent"]
            message += f"; the step waits for input {bound[0].evidence['input_percent']:.1f}% of the time"
        else:
            # The pipeline keeps up (parallel, prefetched): the Python time is hidden behind the step.
            severity = Severity.INFO
            message += "; the step does not wait for input, so it costs no step time now"
            fix = "nothing to do while the pipeline keeps up; if the step gets faster: " + fix
    return [
        Finding(
            code=CODE,
            severity=severity,
            title="Python ops in the step or input pipeline",
            message=message,
            location=",".join(in_step or kinds),
            evidence=evidence,
            fix=fix,
        )
    ]
