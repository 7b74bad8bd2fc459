"""Real in-process profile of a tiny input-bound loop, summarised by xprof, then the rules."""

import subprocess
import sys
import time

import pytest
import tensorflow as tf

from tfpilot.diagnose import ProfileWindow, analyze_profile, parse_step_window, summarize_profile, watch
from tfpilot.diagnose.numerics import parse_check_numerics_message
from tfpilot.diagnose.pipeline import AUTOTUNE_DRAIN_SLACK
from tfpilot.errors import ConfigError


def test_parse_step_window_accepts_and_rejects():
    assert parse_step_window("3:8") == (3, 8)
    for bad in ("8:3", "3", "a:b", "5:5"):
        with pytest.raises(ConfigError):
            parse_step_window(bad)


def test_profile_window_summary_and_input_bound_finding(tmp_path):
    def slow(x):
        time.sleep(0.01)
        return x

    dataset = (
        tf.data.Dataset.range(200).map(lambda i: tf.py_function(slow, [tf.cast(i, tf.float32)], tf.float32)).batch(2)
    )
    weights = tf.Variable(1.0)

    @tf.function
    def step(iterator):
        weights.assign_add(tf.reduce_sum(next(iterator)) * 0.0)

    iterator = iter(dataset)
    step(iterator)
    window = ProfileWindow(tmp_path, start_step=1, stop_step=5)
    for number in range(7):
        with window.step(number):
            step(iterator)
    window.close()
    summary = summarize_profile(tmp_path)
    assert (tmp_path / "trace.json.gz").stat().st_size > 100
    assert (tmp_path / "op_stats.csv").read_text().startswith("operation,")
    assert summary.capture["steps_captured"] == 4
    # 2 elements x 10 ms of Python sleep per step: >= 90% of the step waits for input.
    assert summary.steps.input_percent > 80
    python_ms = sum(op.total_self_time_ms for op in summary.host_python_ops) / 4
    codes = {f.code: f for f in analyze_profile(summary)}
    assert codes["DOC-INPUT-BOUND"].severity.value == "error"
    per_call = codes["DOC-HOST-PYTHON-OP"].evidence["ms_per_call"]
    # A sleep lasts at least what it asks (a loaded host only stretches it), and each step makes
    # two calls: counted once each, the per-step time is twice the per-call time. The per-step sum
    # is not held to 20 ms: tf.data runs the map ahead of the step, so a call at the window's edge
    # can fall partly outside the trace (CI measured 18.7 ms for 10.7 ms calls).
    assert per_call >= 10
    assert 1.5 < python_ms / per_call < 2.5


def test_summary_and_rules_run_without_importing_tensorflow(tmp_path):
    # The doctor's parent process reads the child's profile: a TensorFlow import there cost seconds.
    weights = tf.Variable(1.0)

    @tf.function
    def step(x):
        weights.assign_add(tf.reduce_sum(x))

    window = ProfileWindow(tmp_path, start_step=1, stop_step=4)
    for number in range(5):
        with window.step(number):
            step(tf.ones([8]))
    window.close()
    code = (
        "import sys\n"
        "from tfpilot.diagnose.doctor import doctor_script\n"
        "from tfpilot.diagnose.analysis import analyze_profile\n"
        "from tfpilot.diagnose.xplane import summarize_profile\n"
        "summary = summarize_profile(sys.argv[1])\n"
        "analyze_profile(summary)\n"
        "print(summary.capture['steps_captured'], len(summary.top_ops) > 0, 'tensorflow' in sys.modules)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["3", "True", "False"]


def test_watch_counts_python_scalar_retraces_in_process():
    @tf.function
    def scaled(x, factor):
        return x * factor

    with watch(profile=False) as session:
        for factor in (1.0, 2.0, 3.0):
            scaled(tf.constant(1.0), factor)
    finding = next(f for f in session.findings if f.code == "DOC-RETRACING")
    assert finding.evidence["tracing_count"] == 3
    assert finding.evidence["changed"][0] == {
        "argument": "factor",
        "kind": "python scalar",
        "values": ["1.0", "2.0", "3.0"],
    }


def _watch_loop(pause_seconds):
    """14 calls of a compiled step with ``pause_seconds[i]`` of Python sleep after call i."""

    @tf.function
    def step(x):
        return tf.reduce_sum(tf.matmul(x, x))

    x = tf.ones([32, 32])
    with watch(profile=False) as session:
        for pause in pause_seconds:
            step(x)
            time.sleep(pause)
    return session


def test_step_gap_needs_host_work_in_most_gaps():
    # Host work after every call (4 ms of sleep standing in for logging) is idle time between steps ...
    steady = _watch_loop([0.004] * 14)
    finding = next(f for f in steady.findings if f.code == "DOC-STEP-GAP")
    # time.sleep never returns early, so every gap holds at least 4 ms; a loaded machine only adds to it.
    assert finding.evidence["idle_ms_per_step"] >= 3.9 and finding.evidence["steps"] == 11
    # ... two long stops (what a busy scheduler does to a few gaps) are not, although the mean gap is 3.6 ms.
    stopped = _watch_loop([0.0] * 5 + [0.02, 0.0, 0.0, 0.02] + [0.0] * 5)
    assert stopped.report.timing.idle_ms > 3
    assert "DOC-STEP-GAP" not in {f.code for f in stopped.findings}


def test_check_numerics_message_is_parsed():
    tf.debugging.enable_check_numerics()
    try:
        with pytest.raises(tf.errors.InvalidArgumentError) as error:
            tf.math.log(tf.constant([-1.0]))
    finally:
        tf.debugging.disable_check_numerics()
    parsed = parse_check_numerics_message(error.value.message)
    assert parsed["op"] == "Log"


def test_watcher_finds_python_ops_in_the_step_graph_not_in_the_pipeline():
    import numpy as np

    dataset = tf.data.Dataset.range(8).map(lambda i: tf.numpy_function(np.float32, [i], tf.float32)).batch(2)

    @tf.function
    def host_step(x):
        return tf.py_function(lambda t: t * 2.0, [x], tf.float32)

    @tf.function
    def inner(x):
        return tf.numpy_function(np.square, [x], tf.float32)

    @tf.function
    def nested_step(x):
        return inner(x) + 1.0

    @tf.function
    def graph_step(x):
        return tf.reduce_sum(x)

    with watch(profile=False) as session:
        for x in dataset:
            host_step(x)
            nested_step(x)
            graph_step(x)
    python_ops = {f.name.rsplit(".", 1)[-1]: f.python_ops for f in session.report.functions}
    assert python_ops["host_step"] == ["EagerPyFunc"]
    assert python_ops["nested_step"] == ["PyFunc"]  # found in the called function's definition
    assert python_ops["graph_step"] == []  # the pipeline's numpy_function is not in the step graph


def test_adam_first_trace_and_last_partial_batch_are_not_retracing():
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    optimizer = keras.optimizers.Adam(1e-3)
    # 20 rows in batches of 8: 8, 8, 4 every epoch.
    dataset = tf.data.Dataset.from_tensor_slices(tf.ones([20, 4])).batch(8)

    @tf.function
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True)))
        optimizer.apply_gradients(
            zip(tape.gradient(loss, model.trainable_weights), model.trainable_weights, strict=True)
        )
        return loss

    with watch(profile=False) as session:
        for _ in range(3):
            for x in dataset:
                train_step(x)
    (record,) = [f for f in session.report.functions if f.name.endswith("train_step")]
    # Adam's slots are created in the first trace, which tf.function then traces again: 3 traces, 2 signatures.
    assert record.tracing_count == 3 and record.calls == 9
    assert "DOC-RETRACING" not in {f.code for f in session.findings}


def test_new_tf_function_per_call_is_retracing_at_the_call_site():
    weights = tf.Variable(tf.zeros([4, 1]))

    def train_step(x):
        weights.assign_add(tf.matmul(tf.transpose(x), x)[:, :1] * 0.0)
        return tf.reduce_sum(x)

    with watch(profile=False) as session:
        for _ in range(6):
            call_line = sys._getframe().f_lineno + 1
            tf.function(train_step)(tf.ones([2, 4]))
    finding = next(f for f in session.findings if f.code == "DOC-RETRACING")
    assert finding.evidence["new_functions"] == 6 and finding.evidence["calls"] == 6
    assert finding.evidence["tracing_count"] == 6
    assert finding.evidence["call_site"] == f"{__file__}:{call_line}"
    assert finding.location == finding.evidence["call_site"]
    assert "outside the loop" in finding.fix


def test_pipeline_description_reads_cache_parallelism_prefetch_and_epoch_length():
    from tfpilot.diagnose.pipeline import describe_dataset

    autotune = tf.data.AUTOTUNE
    cached = (
        tf.data.Dataset.range(64)
        .map(lambda i: i * 2, num_parallel_calls=autotune)
        .batch(8)
        .cache()
        .repeat()
        .prefetch(autotune)
    )
    shape = describe_dataset(cached)
    assert shape.kinds == ["Prefetch", "Repeat", "Cache", "Batch", "ParallelMap", "Range"]
    assert shape.stages[4].parallel == -1 and shape.stages[0].buffer == -1 and shape.stages[3].batch == 8
    # Infinite, but the cache is read through once after 64 / 8 batches.
    assert shape.cardinality is None and shape.epoch_steps == 8 and shape.cached and shape.prefetched
    # Batching after the repeat: the epoch in output elements is the cached elements over the batch size.
    assert describe_dataset(tf.data.Dataset.range(60).cache().repeat().batch(8).prefetch(3)).epoch_steps == 8
    assert describe_dataset(tf.data.Dataset.range(60).cache().repeat().prefetch(3)).drain_steps() == 3
    # A fixed buffer is known; an AUTOTUNE one (explicit or the injected final prefetch) may grow: slack.
    assert describe_dataset(tf.data.Dataset.range(60).cache().repeat().prefetch(3)).drain_slack() == 0
    assert shape.drain_slack() == AUTOTUNE_DRAIN_SLACK
    finite = describe_dataset(tf.data.Dataset.range(96).map(lambda i: i).batch(8).cache())
    assert finite.kinds[:3] == ["Cache", "Batch", "Map"] and finite.epoch_steps == 12
    # Filtering above the repeat: the epoch's length in steps is unknown, never guessed.
    assert describe_dataset(tf.data.Dataset.range(9).cache().repeat().filter(lambda i: i > 2)).epoch_steps is None
    generator = tf.data.Dataset.from_generator(lambda: iter(range(3)), output_signature=tf.TensorSpec([], tf.int64))
    assert describe_dataset(generator.map(lambda i: i)).kinds == ["Map", "Generator"]
    uncached = describe_dataset(tf.data.Dataset.range(8).batch(2))
    assert not uncached.cached and uncached.epoch_steps is None and uncached.drain_steps() == 1
    assert uncached.drain_slack() == AUTOTUNE_DRAIN_SLACK


def test_window_waits_for_the_cache_to_fill_and_skips_the_prefetched_steps(tmp_path):
    # 6 batches per epoch; the profile may start at call 2 but the cache fills during the first epoch.
    dataset = tf.data.Dataset.range(48).map(lambda i: tf.cast(i, tf.float32)).batch(8).cache().prefetch(2)
    weights = tf.Variable(0.0)

    @tf.function
    def step(x):
        weights.assign_add(tf.reduce_sum(x))

    with watch(tmp_path, profile_start=2, profile_steps=3) as session:
        for _ in range(3):
            for batch in dataset:
                step(batch)
    report = session.report
    assert report.cache_filled_step == 6 and report.cache_filled is True
    assert report.pipelines[0]["cached"] and report.pipelines[0]["drain_steps"] == 2
    capture = session.summary.capture
    # The first step after the fill opens the window; its 2 prefetched steps are profiled, not measured.
    assert capture["start_step"] == 7 and capture["measure_from"] == 9 and capture["steps"] == [7, 8, 9, 10, 11]
    measured = [row["step"] for row in session.summary.steps.per_step]
    assert measured and all(int(name.split()[-1]) >= 9 for name in measured)
    assert report.timing is not None and report.timing.measured_from_step == 7


def test_epoch_end_of_a_cache_of_unknown_length_is_seen_when_the_iterator_runs_out():
    # filter() makes the cardinality unknown: the fill is seen when the first epoch's iterator is exhausted.
    dataset = tf.data.Dataset.range(48).filter(lambda i: i >= 0).batch(8).cache()
    assert dataset.cardinality().numpy() < 0
    weights = tf.Variable(tf.constant(0, tf.int64))

    @tf.function
    def step(x):
        weights.assign_add(tf.reduce_sum(x))

    with watch(profile=False) as session:
        next(iter(dataset))  # a peek before training (as Keras does to build a model) starts no epoch
        for _ in range(3):
            for batch in dataset:
                step(batch)
    report = session.report
    assert report.pipelines[0]["epoch_steps"] is None and report.cache_filled_step == 6
    assert report.cache_filled is True and report.timing.measured_from_step == 7


def test_drain_and_autotune_cap_are_read_from_tf_data_iterator_stats(tmp_path):
    """The window's drain comes from the profile (prefetch buffers, MapAndBatch results), not from a guess."""
    import os

    from tfpilot.diagnose.pipeline import MAX_DRAIN_STEPS
    from tfpilot.diagnose.xplane import drain_from_stats, find_xplane_files, iterator_stats

    dataset = tf.data.Dataset.range(10_000).map(lambda i: i * 2, num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.batch(4).prefetch(3)
    weights = tf.Variable(tf.constant(0, tf.int64))

    @tf.function
    def step(x):
        weights.assign_add(tf.reduce_sum(x))

    iterator = iter(dataset)
    window = ProfileWindow(tmp_path, start_step=2, stop_step=6, context={"drain_steps": 1})
    for number in range(8):
        with window.step(number):
            step(next(iterator))
    window.close()
    stats = iterator_stats(find_xplane_files(tmp_path))
    iterators = stats["iterators"]
    assert iterators["Iterator::Root::Prefetch"]["buffer_limit"] == 3  # a fixed buffer reads as its size
    fused = iterators["Iterator::Root::Prefetch::MapAndBatch"]
    assert fused["autotune"] is True and 1 <= fused["parallelism"] <= stats["cpu_budget"]
    # AUTOTUNE's cap is tf.data's CPU budget: the cores this process may run on.
    assert stats["cpu_budget"] == len(os.sched_getaffinity(0))
    drain = drain_from_stats(stats)
    # The sum is capped; MapAndBatch's result count follows the host's cores (16 on the CI host, fewer here).
    assert drain == min(3 + fused["max_batch_results"], MAX_DRAIN_STEPS)
    capture = summarize_profile(tmp_path).capture
    # 4 steps profiled, at least 3 measured: the read drain (>= 4) cannot all be skipped.
    assert capture["drain_steps_read"] == drain and capture["measure_from_guess"] == 2
    assert capture["measure_from"] == 3


def _cached_run(tmp_path, *, epochs_of_steps: int, filtered: bool):
    # 40 batches per epoch; filter() hides the epoch's length, so the fill is seen only when it ends.
    dataset = tf.data.Dataset.range(160)
    if filtered:
        dataset = dataset.filter(lambda i: i >= 0)
    dataset = dataset.map(lambda i: tf.cast(i, tf.float32)).batch(4).cache()
    weights = tf.Variable(0.0)

    @tf.function
    def step(x):
        weights.assign_add(tf.reduce_sum(x))

    with watch(tmp_path, profile_start=3, profile_steps=3) as session:
        done = 0
        while done < epochs_of_steps:
            for batch in dataset:
                step(batch)
                done += 1
                if done == epochs_of_steps:
                    break
    return session


def test_a_script_ending_inside_its_cache_filling_epoch_gets_that_epochs_profile_and_says_so(tmp_path):
    session = _cached_run(tmp_path, epochs_of_steps=20, filtered=False)
    report = session.report
    assert report.cache_filled is False and report.profile_window == "cache-fill"
    assert session.summary is not None and session.summary.capture["in_cache_fill"] is True
    found = {f.code: f for f in session.findings}
    assert found["DOC-PROFILE-WINDOW"].severity.value == "info"
    assert "could not start after the cache filled" in found["DOC-PROFILE-WINDOW"].message
    assert "DOC-INPUT-BOUND" not in found


def test_the_filling_epochs_profile_is_replaced_once_the_cache_has_filled(tmp_path):
    session = _cached_run(tmp_path, epochs_of_steps=60, filtered=True)
    report = session.report
    assert report.cache_filled_step == 40 and report.profile_window == "steady"
    capture = session.summary.capture
    assert "in_cache_fill" not in capture and capture["start_step"] == 41
    # Not the cache-fill note; the 3 steps asked for are fewer than the 10 a window should measure, and it says so.
    (window,) = [f for f in session.findings if f.code == "DOC-PROFILE-WINDOW"]
    assert window.title == "Short profile window" and "asked for 3 measured steps" in window.message
