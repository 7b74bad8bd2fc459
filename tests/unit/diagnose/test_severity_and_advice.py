"""Severity from measured cost and advice that fits the script (issue 31 parts 3 and 4), on real TensorFlow."""

import itertools

import pytest
import tensorflow as tf

from tfpilot.diagnose import analyze, watch
from tfpilot.diagnose.rules import host_sync
from tfpilot.diagnose.rules.base import MATERIAL_PERCENT, Observations
from tfpilot.diagnose.watchers import StepTiming, WatchReport


def _retracing(session):
    return [f for f in session.findings if f.code == "DOC-RETRACING"]


def _run(function, lengths):
    with watch(profile=False) as session:
        for length in lengths:
            function(tf.ones([4, length]))
    return session


def _summed(x):
    return tf.reduce_sum(x * 2.0)


def test_reduce_retracing_over_many_calls_is_not_a_problem():
    # TensorFlow's own retracing warning recommends reduce_retracing=True: after the second shape it
    # generalises the varying dimension, so 120 calls of 8 lengths trace a few times only.
    session = _run(tf.function(_summed, reduce_retracing=True), itertools.islice(itertools.cycle(range(5, 13)), 120))
    (record,) = session.report.functions
    assert record.reduce_retracing and record.calls == 120 and record.tracing_count <= 3
    assert _retracing(session) == []


def test_bounded_retracing_is_info_and_the_fix_names_the_argument_and_dimension():
    # Three lengths over 120 calls: three traces, then one graph per length for the rest of the run.
    session = _run(tf.function(_summed), itertools.islice(itertools.cycle((5, 6, 7)), 120))
    (finding,) = _retracing(session)
    assert finding.evidence["tracing_count"] == 3 and finding.evidence["calls"] == 120
    assert finding.evidence["bounded"] is True
    assert finding.severity.value == "info"
    assert "`x` (a tensor whose dimension 1 varied)" in finding.fix


def test_a_trace_per_call_is_a_warning_naming_the_argument_kind():
    session = _run(tf.function(_summed), range(5, 17))
    (finding,) = _retracing(session)
    assert finding.evidence["tracing_count"] == 12 and finding.evidence["bounded"] is False
    assert finding.severity.value == "warning"
    assert "`x` (a tensor whose dimension 1 varied): tf.TensorSpec with None in dimension 1" in finding.fix
    assert "reduce_retracing=True" in finding.fix

    @tf.function
    def scaled(x, factor):
        return x * factor

    with watch(profile=False) as session:
        for factor in range(12):
            scaled(tf.constant(1.0), float(factor))
    (finding,) = _retracing(session)
    assert finding.severity.value == "warning"
    assert finding.fix.startswith("pass `factor` (a Python scalar that took a new value each time) as a tensor")


def _timing(*, sync_ms: float, step_ms: float = 4.0, async_device: bool = False) -> WatchReport:
    """A watch report of 40 steps with one host read each (test_stable_verdicts.py uses it too)."""
    timing = StepTiming(
        driver="train_step",
        steps=40,
        step_ms=step_ms,
        call_ms=step_ms - sync_ms,
        gap_ms=sync_ms,
        input_ms=0.0,
        sync_ms=sync_ms,
        idle_ms=0.0,
        syncs_per_step=1.0,
        idle_percent=0.0,
        input_percent=0.0,
        sync_locations={"train.py:12": 40},
        idle_median_ms=0.0,
        step_median_ms=step_ms,
    )
    return WatchReport(
        functions=[],
        timing=timing,
        eager_gradient_calls=0,
        compiled_calls=42,
        sync_count=40,
        nonfinite=None,
        wall_seconds=1.0,
        profile_dir=None,
        async_device=async_device,
    )


@pytest.mark.parametrize(("sync_ms", "expected"), [(0.02, "info"), (0.19, "info"), (0.2, "warning"), (1.0, "warning")])
def test_host_sync_is_a_warning_only_from_a_material_share_of_the_step(sync_ms, expected):
    (finding,) = host_sync.check(Observations(watch=_timing(sync_ms=sync_ms, step_ms=4.0)))
    assert finding.severity.value == expected
    assert (finding.evidence["sync_share_percent"] >= MATERIAL_PERCENT) == (expected == "warning")


def test_host_sync_under_model_fit_names_fits_knobs_not_the_loop():
    import keras
    import numpy as np

    reads = []

    class ReadEveryBatch(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            reads.append(float(self.model.optimizer.learning_rate.numpy()))

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    features = np.ones((96, 4), "float32")
    with watch(profile=False) as session:
        model.fit(features, features[:, :1], batch_size=8, epochs=1, verbose=0, callbacks=[ReadEveryBatch()])
    assert len(reads) == 12
    assert Observations(watch=session.report).under_keras_fit()
    finding = next(f for f in session.findings if f.code == "DOC-HOST-SYNC")
    assert "steps_per_execution" in finding.fix and "on_epoch_end" in finding.fix
    assert "tf.summary" not in finding.fix
    assert {f.code for f in analyze(watch=session.report)} == {f.code for f in session.findings}


def _pipelines():
    import keras

    images = tf.data.Dataset.from_tensor_slices(tf.ones([16, 8, 8, 3]))
    flip = keras.layers.RandomFlip()
    return {
        "tf.image.random_flip": images.map(tf.image.random_flip_left_right),
        "keras.layers.RandomFlip": images.map(lambda x: flip(x), num_parallel_calls=2),
        "py_function": images.map(lambda x: tf.py_function(lambda a: a, [x], tf.float32)),
        "stateless, fixed seed": images.map(lambda x: tf.image.stateless_random_flip_left_right(x, seed=[1, 2])),
        "deterministic": images.map(lambda x: x * 2.0, num_parallel_calls=2),
    }


def _report_for(dataset) -> WatchReport:
    from tfpilot.diagnose.pipeline import describe_dataset

    report = _timing(sync_ms=0.0)
    report.pipelines = [describe_dataset(dataset.batch(4)).to_dict()]
    return report


@pytest.mark.parametrize(
    ("name", "state"),
    [
        ("tf.image.random_flip", "random"),
        ("keras.layers.RandomFlip", "random"),
        ("py_function", "stateful"),
        ("stateless, fixed seed", None),
        ("deterministic", None),
    ],
)
def test_maps_are_read_as_random_stateful_or_deterministic(name, state):
    from tfpilot.diagnose.pipeline import describe_dataset

    shape = describe_dataset(_pipelines()[name])
    assert [stage.state for stage in shape.stages if stage.kind in ("Map", "ParallelMap")] == [state]


@pytest.mark.parametrize("name", ["tf.image.random_flip", "keras.layers.RandomFlip", "py_function"])
def test_cache_is_never_advised_after_a_random_or_stateful_map(name):
    from tfpilot.diagnose.rules import host_python_ops, input_bound

    observations = Observations(watch=_report_for(_pipelines()[name]))
    facts = input_bound.pipeline_facts(observations)
    for fix in (input_bound.fix_for_stage("Map", "Iterator::Root::Map", facts), host_python_ops._map_fix(facts)):
        assert "cache() after" not in fix, fix
        assert ("never after it" in fix) or ("only the stages before" in fix), fix


def test_a_deterministic_map_may_still_be_cached():
    from tfpilot.diagnose.rules import input_bound

    facts = input_bound.pipeline_facts(Observations(watch=_report_for(_pipelines()["deterministic"])))
    assert "cache() after the deterministic stages" in input_bound.fix_for_stage("ParallelMapV2", "", facts)


def test_model_fit_run_eagerly_is_told_to_drop_run_eagerly_not_to_add_tf_function():
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", run_eagerly=True)
    features = np.ones((48, 4), "float32")
    with watch(profile=False) as session:
        model.fit(features, features[:, :1], batch_size=8, epochs=1, verbose=0)
    finding = next(f for f in session.findings if f.code == "DOC-EAGER-STEP")
    assert finding.evidence["eager_gradient_calls"] == 6 and finding.evidence["under_model_fit"] is True
    assert finding.fix.startswith("model.fit ran its own train_step eagerly: drop run_eagerly=True")
    assert "@tf.function" not in finding.fix
