"""Doctor overhead on a ~60-second training script: doctor wall / plain wall, and where the doctor's time goes.

PYTHONPATH=src .venv/bin/python benchmarks/bench_doctor.py [--seconds 60] [--repeats 1] [--steps N]
PYTHONPATH=src .venv/bin/python benchmarks/bench_doctor.py --in-process R [--steps N]
PYTHONPATH=src .venv/bin/python benchmarks/bench_doctor.py --monitor-calls N

A short plain run of tests/fixtures/doctor/train_long.py measures the step time; the step count is
then chosen so that the plain run lasts about --seconds (or given with --steps). Plain runs and
`doctor_script` runs alternate (the host's load drifts; alternating spreads it over both), and the
ratio of the medians is reported with the doctor's phases: the instrumented child (TensorFlow import,
script, watcher, profile window), the profile summary and the rules in the parent.

``--in-process R`` measures the per-step cost alone, which decides the ratio on a long script: the
script's loop runs R times plain and R times under ``watch(profile=False)`` (watcher and NaN monitor,
no profile window) in this one process, alternating, and the medians of its own ms/step are compared.
On a shared host whose load drifts by minutes, this is steadier than two minute-long processes.

``--monitor-calls N`` isolates the NaN monitor: N plain calls of train_long's step interleaved with N
calls wrapped in ``NumericsMonitor.before`` / ``after``, medians per call (a load spike hits both sides).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(__file__).parents[1] / "tests" / "fixtures" / "doctor" / "train_long.py"


def _cpu_seconds() -> float:
    """User + system CPU of this process and its finished children: the cost a busy host's load does not inflate."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _plain(steps: int) -> tuple[float, float]:
    """(wall seconds, the script's own loop seconds)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    start = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--steps", str(steps)], check=True, capture_output=True, text=True, env=env
    )
    wall = time.perf_counter() - start
    match = re.search(r"loop_seconds ([0-9.]+)", completed.stdout)
    return wall, float(match[1]) if match else wall


def _loop_ms_per_step(steps: int, *, watched: bool) -> float:
    """Run train_long.py's loop in this process; its own loop time per step, in ms."""
    import contextlib
    import io
    import runpy

    from tfpilot.diagnose import watch

    saved, output = sys.argv[:], io.StringIO()
    sys.argv = [str(SCRIPT), "--steps", str(steps)]
    try:
        with contextlib.redirect_stdout(output):
            if watched:
                with watch(profile=False):
                    runpy.run_path(str(SCRIPT), run_name="__main__")
            else:
                runpy.run_path(str(SCRIPT), run_name="__main__")
    finally:
        sys.argv = saved
    match = re.search(r"loop_seconds ([0-9.]+)", output.getvalue())
    assert match, output.getvalue()
    return 1e3 * float(match[1]) / steps


def in_process(repeats: int, steps: int) -> None:
    _loop_ms_per_step(50, watched=False)  # TensorFlow's own first-use costs go to neither side
    plain, watched = [], []
    for _ in range(repeats):
        plain.append(_loop_ms_per_step(steps, watched=False))
        watched.append(_loop_ms_per_step(steps, watched=True))
        print(f"plain {plain[-1]:.3f} ms/step, watched {watched[-1]:.3f} ms/step", flush=True)
    a, b = statistics.median(plain), statistics.median(watched)
    print(
        f"per-step cost of the watcher and NaN monitor ({steps} steps x {repeats}): plain {a:.3f} ms, watched "
        f"{b:.3f} ms, +{b - a:.3f} ms/step ({b / a:.2f}x the loop)"
    )


def monitor_calls(calls: int) -> None:
    import tensorflow as tf

    from tfpilot.diagnose.numerics import NumericsMonitor

    initializer = tf.keras.initializers.GlorotUniform(seed=0)
    layers = [tf.Variable(initializer(shape)) for shape in ([64, 512], [512, 512], [512, 10])]
    rate, mean_loss = tf.Variable(0.01), tf.keras.metrics.Mean()
    x, y = tf.random.stateless_normal([128, 64], seed=[1, 2]), tf.zeros([128], tf.int32)

    @tf.function
    def train_step(x, y):  # train_long.py's step
        with tf.GradientTape() as tape:
            hidden = x
            for weights in layers[:-1]:
                hidden = tf.nn.relu(tf.matmul(hidden, weights))
            logits = tf.matmul(hidden, layers[-1])
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        for weights, gradient in zip(layers, tape.gradient(loss, layers), strict=True):
            weights.assign_sub(rate * gradient)
        mean_loss.update_state(loss)
        return loss

    monitor = NumericsMonitor()
    monitor.before(train_step, (x, y), {})
    monitor.after(train_step, train_step(x, y))
    plain, monitored, before, after = [], [], [], []
    for _ in range(calls):
        start = time.perf_counter()
        train_step(x, y)
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        monitor.before(train_step, (x, y), {})
        called = time.perf_counter()
        outputs = train_step(x, y)
        returned = time.perf_counter()
        monitor.after(train_step, outputs)
        end = time.perf_counter()
        monitored.append(end - start)
        before.append(called - start)
        after.append(end - returned)

    def ms(values: list[float]) -> float:
        return 1e3 * statistics.median(values)

    print(
        f"NaN monitor over {calls} calls (medians): plain call {ms(plain):.3f} ms, monitored {ms(monitored):.3f} ms, "
        f"+{ms(monitored) - ms(plain):.3f} ms (before() {ms(before):.3f} ms, after() {ms(after):.3f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0, help="Target length of the plain run.")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--steps", type=int, help="Train this many steps instead of calibrating.")
    parser.add_argument("--in-process", type=int, metavar="R", help="Only the per-step cost, R alternating pairs.")
    parser.add_argument("--monitor-calls", type=int, metavar="N", help="Only the NaN monitor's cost per call.")
    options = parser.parse_args()
    if options.monitor_calls:
        monitor_calls(options.monitor_calls)
        return
    if options.in_process:
        in_process(options.in_process, options.steps or 1000)
        return
    from tfpilot.diagnose import doctor_script

    steps = options.steps
    if steps is None:
        calibration_steps = 100
        wall, loop = _plain(calibration_steps)
        per_step = loop / calibration_steps
        fixed = wall - loop
        steps = max(int((options.seconds - fixed) / per_step), calibration_steps)
        print(
            f"calibration: {calibration_steps} steps, {per_step * 1e3:.1f} ms/step, {fixed:.1f} s fixed -> {steps} steps"
        )
    plain, doctored, phases, plain_cpu, doctor_cpu = [], [], [], [], []
    for _ in range(options.repeats):
        cpu = _cpu_seconds()
        plain.append(_plain(steps)[0])
        plain_cpu.append(_cpu_seconds() - cpu)
        cpu = _cpu_seconds()
        with tempfile.TemporaryDirectory() as output:
            start = time.perf_counter()
            result = doctor_script(SCRIPT, ["--steps", str(steps)], output_dir=output)
            doctored.append(time.perf_counter() - start)
            phases.append(result.timings)
        doctor_cpu.append(_cpu_seconds() - cpu)
        loud = [f.code for f in result.findings if f.severity.value in ("error", "warning")]
        print(
            f"plain {plain[-1]:.1f} s ({plain_cpu[-1]:.1f} s CPU), doctor {doctored[-1]:.1f} s ({doctor_cpu[-1]:.1f} s CPU), phases {result.timings}, loud findings {loud}"
        )
    anchor, instrumented = statistics.median(plain), statistics.median(doctored)
    print(
        f"doctor overhead on a {anchor:.0f} s script ({steps} steps): doctor/plain wall = {instrumented / anchor:.2f}x "
        f"(median of {options.repeats}; includes process start, profile window and the summary); CPU seconds "
        f"doctor/plain = {statistics.median(doctor_cpu) / statistics.median(plain_cpu):.2f}x"
    )


if __name__ == "__main__":
    main()
