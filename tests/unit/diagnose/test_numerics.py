"""NaN localisation: the first non-finite loss or gradient, replayed from the weights before its step.

Each fixture in tests/fixtures/doctor/nan/ marks the line that produces the first NaN/Inf with
`# NAN-SOURCE`; the script runs in this process under ``watch()`` (the same Watcher the doctor's
subprocess installs) and the finding must name the op check_numerics reports and that line.
"""

import runpy
import sys
from pathlib import Path

import pytest
import tensorflow as tf

from tfpilot.diagnose import watch
from tfpilot.diagnose.numerics import parse_check_numerics_message

NAN = Path(__file__).parents[2] / "fixtures" / "doctor" / "nan"


def _marked_line(script: Path, marker: str) -> int:
    return next(n for n, line in enumerate(script.read_text().splitlines(), start=1) if marker in line)


def _nonfinite(name: str):
    script = NAN / name
    saved = sys.argv[:]
    sys.argv = [str(script)]
    try:
        with watch(profile=False) as session:
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = saved
    (finding,) = [f for f in session.findings if f.code == "DOC-NONFINITE"]
    return script, finding


@pytest.mark.parametrize(
    ("name", "op", "step"),
    [
        ("log_zero.py", "Log", 4),
        ("zero_over_zero.py", "RealDiv", 3),
        ("sqrt_negative.py", "Sqrt", 5),
        ("exp_overflow.py", "Exp", 6),
    ],
)
def test_custom_loop_nan_names_op_and_line(name, op, step):
    script, finding = _nonfinite(name)
    evidence = finding.evidence
    # Found at the step where it appears, replayed from the weights before that step (not NaN ones).
    assert evidence["detected_in"] == "output" and evidence["step"] == step
    assert evidence["replayed_step"] == step and evidence["batch"] == "same"
    assert "weights_before_step" not in evidence and "cause" not in evidence
    assert evidence["reproduced"] is True
    assert evidence["op"] == op
    assert evidence["source"] == f"{script}:{_marked_line(script, '# NAN-SOURCE')}"
    assert finding.location == evidence["source"]
    assert f"op `{op}`" in finding.message and f"{script.name}:" in finding.message


def test_model_fit_nan_names_layer_op_and_line():
    script, finding = _nonfinite("fit_layer_log.py")
    evidence = finding.evidence
    # Batch 5 (0-based) holds the zeros: the 6th call of Keras' train function is the first NaN loss.
    assert evidence["step"] == 6 and evidence["replayed_step"] == 6
    assert evidence["batch"].startswith("batch 5 of a fresh iterator")
    assert evidence["op"] == "Log"
    assert evidence["layer"] == "log_features" and evidence["layer_class"] == "LogFeatures"
    assert evidence["source"] == f"{script}:{_marked_line(script, '# NAN-SOURCE')}"
    assert "multi_step_on_iterator" in finding.message and "<locals>" not in finding.message


def test_nan_from_an_update_replays_the_step_before():
    script, finding = _nonfinite("gradient_update.py")
    evidence = finding.evidence
    # Call 4's loss is the first NaN (before the weights check, every 8 calls for this model, came round), but
    # call 3's gradient (sqrt at 0) made the weights NaN.
    assert evidence["step"] == 4 and evidence["replayed_step"] == 3
    assert evidence["cause"] == "update"
    # check_numerics names the gradient op; the source is the forward op's line, the tape.gradient line is kept.
    assert evidence["op"] == "SqrtGrad" and evidence["forward_op"] == "Sqrt"
    assert evidence["source"] == f"{script}:{_marked_line(script, '# NAN-SOURCE')}"
    assert evidence["gradient_source"] == f"{script}:{_marked_line(script, '# GRADIENT-LINE')}"
    assert "the gradient of `Sqrt`" in finding.message
    assert finding.fix.startswith("tf.sqrt(tf.maximum(x, eps))")


def test_model_fit_nan_born_in_a_gradient_names_the_forward_op_its_layer_and_line():
    # Under model.fit no user frame calls tape.gradient: without the forward op there would be no line at all.
    script, finding = _nonfinite("fit_sqrt_gradient.py")
    evidence = finding.evidence
    assert evidence["step"] == 2 and evidence["replayed_step"] == 1 and evidence["cause"] == "update"
    assert evidence["op"] == "SqrtGrad" and evidence["forward_op"] == "Sqrt"
    assert evidence["source"] == f"{script}:{_marked_line(script, '# NAN-SOURCE')}"
    assert "gradient_source" not in evidence
    assert evidence["layer"] == "distance" and evidence["layer_class"] == "Distance"
    assert finding.location == evidence["source"]


def test_replay_leaves_the_run_state_as_it_was():
    weights = tf.Variable([1.0, 1.0])

    @tf.function
    def step(x):
        loss = tf.reduce_sum(tf.math.log(x * weights))
        weights.assign_add(x)
        return loss

    with watch(profile=False) as session:
        step(tf.constant([1.0, 1.0]))
        step(tf.constant([0.0, 1.0]))
    # Two updates of +x: the replay restored the weights before call 2, then put back the run's values.
    assert weights.numpy().tolist() == [2.0, 3.0]
    assert session.report.nonfinite["replayed_step"] == 2
    assert not tf.config.functions_run_eagerly()


def test_graph_check_numerics_message_gives_the_deepest_user_frame():
    @tf.function
    def compiled(x):
        return tf.math.log(x)

    tf.debugging.enable_check_numerics()
    try:
        with pytest.raises(tf.errors.InvalidArgumentError) as error:
            compiled(tf.constant([0.0]))
    finally:
        tf.debugging.disable_check_numerics()
    parsed = parse_check_numerics_message(error.value.message)
    assert parsed["op"] == "Log"
    line = compiled.python_function.__code__.co_firstlineno + 2
    assert parsed["source"] == f"{__file__}:{line}" and parsed["user_function"] == "compiled"


def test_snapshot_reads_keep_the_values_before_each_update():
    """The fast-path reads alias the variables' buffers; the step's in-place updates must not reach them."""
    import keras

    from tfpilot.diagnose.numerics import NumericsMonitor

    weights = tf.Variable([1.0, 2.0])
    counter = keras.Variable(0.0)  # a Keras variable: its resource variable is what the function captures

    @tf.function
    def step(x):
        weights.assign_add(x)
        counter.assign_add(1.0)
        return tf.reduce_sum(weights)

    monitor = NumericsMonitor()
    for _ in range(3):
        monitor.before(step, (tf.constant([1.0, 1.0]),), {})
        assert monitor.after(step, step(tf.constant([1.0, 1.0]))) is None
    tracked = next(iter(monitor._tracked.values()))
    # Small variables: the weights check runs every 8 calls, so all three calls' snapshots are kept.
    assert tracked.check_every == 8 and len(tracked.history) == 3
    before_last, before_previous = tracked.history[-1], tracked.history[-2]
    values = {tuple(v.numpy().reshape(-1).tolist()) for v in before_last.snapshot}
    assert values == {(3.0, 4.0), (2.0,)}  # the weights and the counter before call 3
    values = {tuple(v.numpy().reshape(-1).tolist()) for v in before_previous.snapshot}
    assert values == {(2.0, 3.0), (1.0,)}  # ... and before call 2
    assert weights.numpy().tolist() == [4.0, 5.0]


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [
        (lambda: tf.constant(1.5), None),
        (lambda: tf.constant(float("nan")), "nan"),
        (lambda: {"loss": tf.constant([1.0, float("inf")]), "step": tf.constant(3)}, "inf"),
        (lambda: (tf.constant(1.0), tf.fill([1000], float("nan"))), None),  # a batch, not a loss: not checked
        (lambda: tf.constant([2, 3]), None),
    ],
)
def test_output_check_finds_nonfinite_losses_and_metrics(outputs, expected):
    import math

    from tfpilot.diagnose.numerics import _nonfinite_output

    found = _nonfinite_output(outputs())
    if expected is None:
        assert found is None
    elif expected == "nan":
        assert found is not None and math.isnan(found)
    else:
        assert found == math.inf


def test_nan_at_the_first_call_is_replayed_from_the_weights_kept_before_it():
    """The first call traces first so its variables exist: the snapshot before call 1 must be kept."""
    weights = tf.Variable([0.0, 1.0])

    @tf.function
    def step(x):
        loss = tf.reduce_sum(tf.math.log(weights * x))
        weights.assign_add(x)
        return loss

    with watch(profile=False) as session:
        step(tf.constant([1.0, 1.0]))
    found = session.report.nonfinite
    assert found["step"] == 1 and found["replayed_step"] == 1
    assert "weights_before_step" not in found and found["op"] == "Log"
    assert weights.numpy().tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    ("name", "step", "variable"),
    [("hidden_by_output.py", 3, "Variable:0"), ("fit_hidden_by_loss.py", 1, "embed/kernel:0")],
)
def test_a_nan_the_loss_never_shows_is_found_in_the_weights_at_the_step_it_entered(name, step, variable):
    script, finding = _nonfinite(name)
    evidence = finding.evidence
    # No returned loss was ever non-finite: the weights, checked every few calls and at the end of the run, show
    # it; the kept snapshots say which call's update put it there.
    assert evidence["detected_in"] == "weights" and evidence["step"] == step
    assert any(name.endswith(variable) for name in evidence["nonfinite_variables"]), evidence["nonfinite_variables"]
    assert evidence["replayed_step"] == step and evidence["reproduced"] is True
    assert evidence["op"] == "SqrtGrad" and evidence["forward_op"] == "Sqrt"
    assert evidence["source"] == f"{script}:{_marked_line(script, '# NAN-SOURCE')}"
    assert "although no loss it returned was non-finite" in finding.message


def test_model_fit_nan_inside_a_built_in_layer_names_the_line_that_created_it():
    # No user frame runs a built-in layer's op under model.fit: the layer's creation is the line.
    script, finding = _nonfinite("fit_builtin_layer_eps0.py")
    evidence = finding.evidence
    assert evidence["op"] == "Rsqrt" and evidence["layer_class"] == "LayerNormalization"
    assert evidence["source"] == f"{script}:{_marked_line(script, '# NAN-SOURCE')}"
    assert evidence["source_is"] == "the line that created the layer"
    assert f"created at {evidence['source']}" in finding.message and "epsilon" in finding.fix


def test_layer_sites_narrow_by_an_explicit_name_and_never_guess_between_unnamed_calls(tmp_path):
    import keras

    from tfpilot.diagnose.layer_sites import layer_sites

    source = tmp_path / "model.py"
    source.write_text(
        "import keras\n"
        "a = keras.layers.LayerNormalization()\n"
        "b = keras.layers.LayerNormalization(name='second')\n"
        "c = LayerNormalization(epsilon=0)\n"
        "d = keras.layers.Dense(3)\n"
    )
    named = keras.layers.LayerNormalization(name="second")
    assert layer_sites(named, [source]) == [f"{source}:3"]
    unnamed = keras.layers.LayerNormalization()
    assert layer_sites(unnamed, [source]) == [f"{source}:2", f"{source}:4"]
    assert layer_sites(keras.layers.Dense(3), [source]) == [f"{source}:5"]
    assert layer_sites(keras.layers.Dropout(0.1), [source]) == []
