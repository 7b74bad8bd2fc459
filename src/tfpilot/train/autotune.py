"""`steps_per_execution: auto` and `jit_compile: auto`: choose both by timing whole training steps.

What is timed is the compiled call the trainer makes (forward, backward, NaN guard, clipping,
optimizer update, metrics, bookkeeping), on real training batches, so the choice reflects
everything a step costs rather than the forward and backward pass alone (XLA on the gradients
only made an MLP faster and a small CNN 2x slower; fit compiles the whole step).

* XLA: the per-step time of the whole step without XLA, with XLA launched once per step (as
  Keras does) and with XLA looping over a call's stacked batches (StepFunctions._stacked_steps),
  each inside a multi-step call; the fastest wins, and a model XLA cannot compile gets no XLA.
* steps_per_execution: a call has a fixed cost (Python, launching the function, one host sync)
  on top of its steps. It is measured as the time of a one-step call minus the per-step time
  inside a long call, and steps_per_execution is the smallest power of two that makes it at most
  `overhead_budget` (2%) of the steps it runs and a call at least `min_call_seconds` (200 ms) long,
  capped at `max_steps_per_execution`. The second rule is there because the overhead is a small
  difference of two timings that load from other processes can hide.

Timing runs real optimizer updates, so every variable the step touches (model, optimizer, metrics,
counters) is copied first and restored afterwards: choosing changes the speed of training, never
its result. Runs shorter than `min_steps` are not tuned (the timing would cost more than it saves).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from typing import Any

import tensorflow as tf

from tfpilot.config.schema import JitCompile, TrainConfig
from tfpilot.findings import Finding, Severity
from tfpilot.train import step_cache

__all__ = ["MIN_TUNED_STEPS", "StepChoice", "choose_step_settings", "tune_steps", "tuned_finding"]

# Below this many planned steps the one-off cost of tracing twice and timing is not won back.
MIN_TUNED_STEPS = 200


@dataclasses.dataclass(frozen=True)
class StepChoice:
    jit_compile: bool
    steps_per_execution: int
    # Seconds per step without XLA ("no_xla"), with XLA one launch per step ("xla") and one launch
    # per call over stacked batches ("xla_stacked"), and per call ("call_overhead").
    timings: dict[str, float]
    tuned: bool
    stack_batches: bool = False
    # When the choice was taken from an earlier run's measurement (step_cache.py): when that was.
    reused_from: str | None = None

    def describe(self) -> str:
        xla = ("on, batches stacked" if self.stack_batches else "on") if self.jit_compile else "off"
        parts = [f"steps_per_execution {self.steps_per_execution}", f"XLA {xla}"]
        measured = [
            f"{name.replace('_', ' ')} {seconds * 1e3:.2f} ms"
            for name, seconds in self.timings.items()
            if math.isfinite(seconds)
        ]
        return ", ".join(parts) + (f" (measured per step: {', '.join(measured)})" if measured else "")


def _state_variables(step_functions) -> list[tf.Variable]:
    # What a step writes, and the bookkeeping counters the timing advances too.
    return [
        *step_functions.state_variables(),
        step_functions.global_step,
        step_functions.grad_norm,
        step_functions.nonfinite_steps,
        step_functions.first_nonfinite_step,
    ]


def _time_call(function, iterator, steps: int) -> float:
    limit = tf.constant(steps, tf.int64)
    start = time.perf_counter()
    function(iterator, limit).numpy()
    return time.perf_counter() - start


_LOG = logging.getLogger("tfpilot.progress")  # shown by the CLI (cli/render.show_log_lines)
_XLA_FAILURES = (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError, tf.errors.InternalError)


# The ways a step can be compiled, by the name their timings carry: (XLA, batches stacked).
_CANDIDATES = {"no_xla": (False, False), "xla": (True, False), "xla_stacked": (True, True)}


def _candidates(step_functions, batches: tf.data.Dataset, jit: str | None) -> list[str]:
    """`jit`: a candidate's name when train.jit_compile fixes it, None under `auto`."""
    names = list(_CANDIDATES) if jit is None else [jit]
    stackable = (
        not step_functions.distributed
        and bool(step_functions.batch_size)
        and step_functions.stack_shapes(batches.element_spec) is not None
    )
    # Batches that cannot be stacked (padded text, too large) run XLA one launch per step.
    return list(dict.fromkeys(name if stackable or name != "xla_stacked" else "xla" for name in names))


def _compile_as(step_functions, name: str) -> None:
    step_functions.jit_compile, step_functions.stack_batches = _CANDIDATES[name]


def tune_steps(
    step_functions,
    batches: tf.data.Dataset,
    *,
    jit: str | None,
    steps_per_execution: int | None,
    max_steps_per_execution: int = 64,
    overhead_budget: float = 0.02,
    min_call_seconds: float = 0.2,
    rounds: int = 3,
) -> StepChoice:
    """Choose what is `None` among `jit` (how the step is compiled: "no_xla", "xla" or "xla_stacked")
    and `steps_per_execution`; set them on `step_functions`. Stacking is left out for batches that
    cannot be stacked (StepFunctions.stack_shapes).

    `batches`: a few real training batches, repeated (the caller caches them). The candidates
    are timed in interleaved rounds and each keeps its fastest call, so a burst of other load
    on the machine slows every candidate rather than deciding for one.
    """
    candidates = _candidates(step_functions, batches, jit)
    _LOG.info("tuning the training step: timing %s on real batches", ", ".join(candidates))
    saved = [(variable, tf.identity(variable)) for variable in _state_variables(step_functions)]
    # candidate -> (one-step function, long-call function, iterator). The stacked XLA step holds
    # steps_per_execution batches per launch (StepFunctions._stacked_steps), so its one-step calls
    # are timed on a function built for one batch and its long calls on one built for `steps`.
    compiled: dict[str, tuple[Any, Any, Any]] = {}
    single = dict.fromkeys(candidates, math.inf)
    per_step = dict.fromkeys(candidates, math.inf)
    try:
        step_functions.steps_per_execution = steps_per_execution or 1
        for candidate in candidates:
            _compile_as(step_functions, candidate)
            function, iterator = step_functions.train_function, iter(batches)
            try:
                _time_call(function, iterator, 1)  # trace and compile outside the timing
            except _XLA_FAILURES:
                continue  # XLA could not compile this model (an op without an XLA kernel, dynamic shapes)
            compiled[candidate] = (function, function, iterator)
            single[candidate] = min(_time_call(function, iterator, 1) for _ in range(3))
        # Long calls of ~50 ms: the per-call cost is small against them, and tuning stays short.
        fastest = min(single.values()) if compiled else 1.0
        steps = steps_per_execution or max(
            1, min(max_steps_per_execution, 2 ** int(math.log2(max(1.0, 0.05 / fastest))))
        )
        step_functions.steps_per_execution = steps
        for candidate, (function, _, iterator) in list(compiled.items()):
            _compile_as(step_functions, candidate)
            compiled[candidate] = (function, step_functions.train_function, iterator)
        # One untimed long call each first: it compiles what one-step calls never ran (a new
        # stack size; the XLA step without the norm, which only steps before a call's last run),
        # and the first XLA executions in a process run slower (fresh buffers), which made the
        # first tuning of a process pick no XLA for an MLP whose XLA step is 25% faster. Then a
        # candidate whose long call is 4x slower than the fastest one-step call is not timed
        # further (the stacked XLA loop of a CNN: 10x slower).
        for candidate, (_, function, iterator) in list(compiled.items()):
            _time_call(function, iterator, steps)
            elapsed = _time_call(function, iterator, steps)
            if elapsed > 4 * steps * fastest:
                per_step[candidate] = elapsed / steps
                del compiled[candidate]
        for round_index in range(rounds):
            _LOG.info("tuning the training step: round %d/%d, %d steps per call", round_index + 1, rounds, steps)
            for candidate, (one_step, function, iterator) in compiled.items():
                single[candidate] = min(single[candidate], _time_call(one_step, iterator, 1))
                per_step[candidate] = min(per_step[candidate], _time_call(function, iterator, steps) / steps)
    finally:
        for variable, value in saved:
            variable.assign(value)
    timings = dict(per_step)
    chosen = min(candidates, key=lambda candidate: per_step[candidate])
    _compile_as(step_functions, chosen)
    if steps_per_execution is None:
        overhead = max(single[chosen] - per_step[chosen], 0.0) if math.isfinite(per_step[chosen]) else 0.0
        timings["call_overhead"] = overhead
        needed = overhead / (overhead_budget * per_step[chosen]) if overhead else 1.0
        # The overhead is a small difference of two timings, which other load on the machine can
        # drive to zero; calls of at least `min_call_seconds` keep it small whatever was measured.
        # The cost of a call in training is larger than a one-step call on cached batches shows:
        # a small CNN (19 ms steps) measured 0.5-0.8 ms per call, yet ran 3% slower at 4 steps
        # per call than at 16 (Keras fit alike), hence 200 ms rather than 50.
        if math.isfinite(per_step[chosen]):
            needed = max(needed, min_call_seconds / per_step[chosen])
        steps_per_execution = min(max_steps_per_execution, 2 ** max(0, math.ceil(math.log2(max(needed, 1.0)))))
    step_functions.steps_per_execution = steps_per_execution
    _LOG.info("tuning the training step: chose %s, %d steps per call", chosen, steps_per_execution)
    return StepChoice(
        jit_compile=step_functions.jit_compile,
        steps_per_execution=steps_per_execution,
        timings=timings,
        tuned=True,
        stack_batches=step_functions.stack_batches,
    )


def choose_step_settings(step_functions, pipeline, train: TrainConfig, *, planned_steps: int) -> StepChoice:
    """The trainer's entry point: what `train.jit_compile` / `train.steps_per_execution` leave to
    `auto` is tuned on the default strategy for runs of at least MIN_TUNED_STEPS steps.

    Elsewhere `auto` means no XLA and one step per call: under MirroredStrategy and multi-worker
    the whole step cannot be one XLA cluster (all-reduce and merge_call sit between its halves), and
    short runs would spend longer tuning than training."""
    jit = {JitCompile.FALSE: "no_xla", JitCompile.TRUE: "xla", JitCompile.STACKED: "xla_stacked"}.get(train.jit_compile)
    steps = None if train.steps_per_execution == "auto" else int(train.steps_per_execution)
    if (jit is None or steps is None) and not step_functions.distributed and planned_steps >= MIN_TUNED_STEPS:
        # A few real batches, cached so the timing measures the step and not the input pipeline.
        batches = pipeline.train(epoch=0).take(8).cache().repeat()
        key = _cache_key(step_functions, batches, train, jit=jit, steps=steps)
        stored = step_cache.load_choice(key)
        if stored is not None:
            # The same step on the same machine was measured before: the same settings, no timing.
            step_functions.jit_compile = bool(stored["jit_compile"])
            step_functions.stack_batches = bool(stored["stack_batches"])
            step_functions.steps_per_execution = int(stored["steps_per_execution"])
            _LOG.info("step settings: reusing the choice measured on %s for this model here", stored["measured_at"])
            return StepChoice(
                jit_compile=step_functions.jit_compile,
                steps_per_execution=step_functions.steps_per_execution,
                timings={name: float(value) for name, value in stored["timings"].items()},
                tuned=False,
                stack_batches=step_functions.stack_batches,
                reused_from=str(stored["measured_at"]),
            )
        choice = tune_steps(step_functions, batches, jit=jit, steps_per_execution=steps)
        step_cache.store_choice(
            key,
            jit_compile=choice.jit_compile,
            stack_batches=choice.stack_batches,
            steps_per_execution=choice.steps_per_execution,
            timings=choice.timings,
        )
        return choice
    _compile_as(step_functions, jit or "no_xla")
    step_functions.steps_per_execution = steps or 1
    return StepChoice(
        jit_compile=step_functions.jit_compile,
        steps_per_execution=steps or 1,
        timings={},
        tuned=False,
        stack_batches=step_functions.stack_batches,
    )


# TrainConfig fields that do not change what one training step computes or costs.
_NOT_THE_STEP = frozenset(
    {
        "epochs",
        "seed",
        "deterministic",
        "early_stopping",
        "checkpoint_every_steps",
        "max_checkpoints",
        "summary_every_steps",
        "histogram_every_epochs",
        "steps_per_epoch",
        "nan_max_retries",
    }
)


def _cache_key(
    step_functions, batches: tf.data.Dataset, train: TrainConfig, *, jit: str | None, steps: int | None
) -> str:
    """What makes this step what it is, for step_cache: the model, the batches, the step's settings."""
    model = step_functions.model
    try:
        model_config: Any = json.loads(model.to_json())
    except Exception:  # a model Keras cannot describe: its layers and weight shapes stand for it
        model_config = [(type(layer).__name__, [list(w.shape) for w in layer.weights]) for layer in model.layers]
    settings = {
        "train": train.model_dump(mode="json", exclude=set(_NOT_THE_STEP)),
        "jit": jit,
        "steps_per_execution": steps,
        "distributed": bool(step_functions.distributed),
    }
    return step_cache.step_key(model_config=model_config, element_spec=str(batches.element_spec), settings=settings)


def tuned_finding(choice: StepChoice, *, location: str) -> Finding:
    if choice.reused_from is not None:
        message = (
            f"reused the step settings measured on {choice.reused_from} for this model and data on this machine: "
            f"{choice.describe()}"
        )
        fix = (
            f"to measure again, run with {step_cache.CACHE_ENV}=off (or delete its entry in "
            f"{step_cache.cache_file()}); or set train.steps_per_execution and train.jit_compile to fixed values"
        )
    else:
        message = f"timed whole training steps on real batches and chose {choice.describe()}"
        fix = "set train.steps_per_execution and train.jit_compile to fixed values to skip the timing"
    return Finding(
        code="TRAIN-STEPS-TUNED",
        severity=Severity.INFO,
        title="Step settings chosen by measurement",
        message=message,
        location=location,
        # Milliseconds; a candidate XLA could not compile is left out (JSON has no inf).
        evidence={
            "steps_per_execution": choice.steps_per_execution,
            "jit_compile": choice.jit_compile,
            **{f"{name}_ms": round(s * 1e3, 4) for name, s in choice.timings.items() if math.isfinite(s)},
            **({"reused_from": choice.reused_from} if choice.reused_from else {}),
        },
        fix=fix,
    )
