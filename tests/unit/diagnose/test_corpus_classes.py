"""Classes of failure found on scripts tfpilot's authors did not write (issue 31, part 6), one test each.

Each test holds a VALID case (the finding still fires where it should) next to the INVALID one the
outside corpus exposed; the watcher tests run real TensorFlow under ``watch()``.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.diagnose import analyze, watch, xplane
from tfpilot.diagnose.rules import input_bound
from tfpilot.diagnose.rules.base import Observations
from tfpilot.diagnose.watchers import FunctionRecord, StepTiming, WatchReport


def _report(*, iterators_created: int, calls: int = 40, input_ms: float = 4.0, step_ms: float = 6.0) -> WatchReport:
    timing = StepTiming(
        driver="train_step",
        steps=calls - 2,
        step_ms=step_ms,
        call_ms=step_ms - input_ms,
        gap_ms=input_ms,
        input_ms=input_ms,
        sync_ms=0.0,
        idle_ms=0.0,
        syncs_per_step=0.0,
        idle_percent=0.0,
        input_percent=100.0 * input_ms / step_ms,
        sync_locations={},
        idle_median_ms=0.0,
        step_median_ms=step_ms,
    )
    function = FunctionRecord(key="k", name="train_step", location="loop.py:3", calls=calls, tracing_count=1, traces=[])
    return WatchReport(
        functions=[function],
        timing=timing,
        eager_gradient_calls=0,
        compiled_calls=calls,
        sync_count=0,
        nonfinite=None,
        wall_seconds=1.0,
        profile_dir=None,
        iterators_created=iterators_created,
    )


# ------------------------------------------------------- a new iterator every step is no slow pipeline
def test_an_iterator_made_every_step_is_info_not_an_input_bound_warning():
    """tf#46126-style agent: model.predict per step builds a new iterator each call; its start-up is the wait."""
    per_step = analyze(watch=_report(iterators_created=40))
    finding = next(f for f in per_step if f.code == "DOC-INPUT-BOUND")
    assert finding.severity.value == "info"
    assert finding.evidence["iterators_per_step"] == 1.0
    assert "iter(dataset)" in finding.fix and "predict_on_batch" in finding.fix


def test_one_iterator_per_epoch_keeps_the_input_bound_verdict():
    # Valid: the same wait with one iterator per epoch (2 epochs of 20 steps) is a pipeline that cannot keep up.
    finding = next(f for f in analyze(watch=_report(iterators_created=2)) if f.code == "DOC-INPUT-BOUND")
    assert finding.severity.value == "error"
    assert "iterators_per_step" not in finding.evidence
    # And no iterator count (a report from before it was kept) changes nothing.
    assert input_bound.iterators_per_step(Observations(watch=_report(iterators_created=0))) is None


def test_watcher_counts_the_iterators_the_script_makes():
    dataset = tf.data.Dataset.from_tensor_slices(np.ones((8, 4), "float32")).batch(2).repeat()

    @tf.function
    def step(x):
        return tf.reduce_sum(x)

    with watch(profile=False) as fresh:
        for _ in range(6):
            step(next(iter(dataset)))  # a new iterator each step
    with watch(profile=False) as kept:
        iterator = iter(dataset)
        for _ in range(6):
            step(next(iterator))
    assert fresh.report.iterators_created == 6
    assert kept.report.iterators_created == 1
    assert input_bound.iterators_per_step(Observations(watch=fresh.report)) == 1.0
    assert input_bound.iterators_per_step(Observations(watch=kept.report)) == 1 / 6


# ------------------------------------------------------- an uncompiled step's ops are in the trace only
def _span(name: str, ts: float, dur: float, tid: int = 1) -> dict:
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def test_eager_ops_are_read_from_the_trace_with_their_kernels_as_self_time():
    trace = {
        "traceEvents": [
            _span("EagerLocalExecute: Mul", 0.0, 10.0),
            _span("EagerKernelExecute", 2.0, 3.0),
            _span("EagerLocalExecute: Mul", 20.0, 10.0),
            _span("EagerKernelExecute", 22.0, 1.0),
            _span("EagerLocalExecute: _MklMatMul", 40.0, 30.0, tid=2),
            _span("EagerKernelExecute", 45.0, 20.0, tid=2),
            # A tf.function call is no op: its kernel is the whole graph.
            _span("EagerLocalExecute: __inference_train_step_123", 100.0, 500.0),
            _span("EagerKernelExecute", 101.0, 490.0),
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1},
        ]
    }
    ops = {op.type: op for op in xplane.eager_ops_from_trace(json.dumps(trace))}
    assert set(ops) == {"Mul", "MatMul"}
    assert ops["Mul"].occurrences == 2 and ops["Mul"].total_self_time_ms == pytest.approx(0.004)
    assert ops["MatMul"].raw_type == "_MklMatMul" and ops["MatMul"].eager and ops["MatMul"].host_or_device == "Host"
    # Invalid input for the reader: no eager events at all gives no ops.
    assert xplane.eager_ops_from_trace(json.dumps({"traceEvents": [_span("MatMul", 0.0, 5.0)]})) == []


def test_a_profiled_eager_loop_counts_its_ops_and_a_compiled_one_does_not_gain_eager_ops(tmp_path):
    w = tf.Variable(tf.ones((4, 2)))
    states = tf.ones((16, 4))

    def eager_step():
        with tf.GradientTape() as tape:
            loss = tf.constant(0.0)
            for i in range(16):
                loss = loss + tf.square(tf.reduce_sum(states[i] * w[:, 0]))
        w.assign_sub(1e-4 * tape.gradient(loss, w))

    with watch(tmp_path / "eager", profile_start=2, profile_steps=3) as eager:
        for _ in range(8):
            eager_step()
    summary = eager.summary
    assert summary is not None
    # 16 x (StridedSlice x2, Mul, Sum, Square, AddV2) forward alone: well over 50 ops per step, all eager.
    assert summary.op_occurrences_per_step > 50
    assert summary.top_ops and all(op.eager for op in summary.top_ops if op.type != "Dataset")

    compiled_step = tf.function(eager_step)
    with watch(tmp_path / "compiled", profile_start=2, profile_steps=3) as compiled:
        for _ in range(8):
            compiled_step()
    assert compiled.summary is not None
    assert not any(op.eager for op in compiled.summary.top_ops)


# ------------------------------------------------------- a status line printed every step reads the loss
@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda loss: f"loss {loss:.4f}", id="f-string"),
        pytest.param(lambda loss: str(loss), id="str"),
        pytest.param(lambda loss: repr(loss), id="repr"),
        pytest.param(lambda loss: float(loss), id="float"),
    ],
)
def test_a_value_printed_or_formatted_every_step_is_a_host_sync(read):
    @tf.function
    def step(x):
        return tf.reduce_sum(x * x)

    with watch(profile=False) as session:
        for _ in range(12):
            read(step(tf.ones([4])))
    timing = session.report.timing
    assert timing is not None and timing.syncs_per_step == pytest.approx(1.0, abs=0.1)
    (location,) = timing.sync_locations  # the user's line that formats it (the lambda above)
    assert location.rsplit(":", 1)[0].endswith("test_corpus_classes.py")
    # Invalid: nothing read inside the loop, one read after it: no sync per step.
    with watch(profile=False) as once:
        for _ in range(12):
            loss = step(tf.ones([4]))
        read(loss)
    assert once.report.timing is not None and once.report.timing.syncs_per_step < 0.2
