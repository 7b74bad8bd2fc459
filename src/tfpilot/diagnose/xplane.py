"""Turn a profiler session (.xplane.pb) into a ProfileSummary with xprof, without a server.

xprof's ``xspace_to_tool_data`` gives the same tables TensorBoard's profile plugin shows:
overview_page and input_pipeline_analyzer (step-time breakdown, tf.data stages) and
framework_op_stats (per-op self time, host vs device), as gviz JSON; trace_viewer gives a Chrome
trace. The summary keeps only what the rules and the HTML report need (schema in docs/doctor.md).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import gzip
import importlib.util
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from tfpilot.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text
from tfpilot.diagnose.op_types import canonical_op_type
from tfpilot.diagnose.pipeline import MAX_DRAIN_STEPS
from tfpilot.errors import TfpilotError

__all__ = [
    "ProfileSummary",
    "StepBreakdown",
    "OpStat",
    "InputStage",
    "summarize_profile",
    "load_summary",
    "find_xplane_files",
    "HOST_PYTHON_OP_TYPES",
    "SUMMARY_FILE",
    "TRACE_FILE",
    "OP_STATS_FILE",
    "SCHEMA_VERSION",
]

SUMMARY_FILE = "summary.json"
# Written by capture.ProfileWindow; read here so that summarising never imports capture (Keras, TensorFlow).
CAPTURE_FILE = "capture.json"
TRACE_FILE = "trace.json.gz"
OP_STATS_FILE = "op_stats.csv"
SCHEMA_VERSION = 1
# Ops that call back into the Python interpreter (py_function, numpy_function, from_generator).
HOST_PYTHON_OP_TYPES = frozenset({"EagerPyFunc", "PyFunc", "PyFuncStateless"})
_XPLANE_MODULE = "_tfpilot_xplane_pb2"


class ProfileError(TfpilotError):
    exit_code = 2


@dataclasses.dataclass
class StepBreakdown:
    """Mean per-step time (ms) split the way TF Profiler splits it: input / compute / other."""

    steps: int
    step_ms: float
    input_ms: float
    compute_ms: float
    other_ms: float
    input_percent: float
    compute_percent: float
    other_percent: float
    per_step: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class OpStat:
    operation: str
    type: str
    host_or_device: str
    occurrences: int
    total_self_time_ms: float
    avg_self_time_us: float
    self_time_percent: float
    eager: bool
    # `type` is canonical (MatMul for oneDNN's _MklMatMul); this is what the profile said.
    raw_type: str = ""


@dataclasses.dataclass
class InputStage:
    """One tf.data iterator (e.g. ``Iterator::Root::Prefetch::Map``) and its self time."""

    name: str
    stage: str
    count: int
    self_time_ms: float
    self_time_percent: float


@dataclasses.dataclass
class ProfileSummary:
    profile_dir: str
    session: str
    hardware_type: str
    steps: StepBreakdown
    top_ops: list[OpStat]
    host_python_ops: list[OpStat]
    input_stages: list[InputStage]
    op_occurrences_per_step: float
    host_op_self_time_ms_per_step: float
    input_conclusion: str
    capture: dict[str, Any]
    files: dict[str, Any]
    schema_version: int = SCHEMA_VERSION
    # tf.data's own iterator stats at the start of the window (iterator_stats()): cpu_budget, and per
    # iterator buffer_limit / max_batch_results / parallelism / autotune.
    pipeline_stats: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProfileSummary:
        data = dict(data)
        data["steps"] = StepBreakdown(**data["steps"])
        data["top_ops"] = [OpStat(**op) for op in data["top_ops"]]
        data["host_python_ops"] = [OpStat(**op) for op in data["host_python_ops"]]
        data["input_stages"] = [InputStage(**stage) for stage in data["input_stages"]]
        return cls(**data)

    @property
    def captured_steps(self) -> int:
        """Steps inside the session (op stats cover all of them; the breakdown drops the edges)."""
        return int(self.capture.get("steps_captured") or self.steps.steps or 1)


# ------------------------------------------------------------------------------ xprof access
@contextlib.contextmanager
def _quiet_native_logs():
    """xprof's C++ side logs every conversion at INFO to fd 2; keep the terminal readable."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def find_xplane_files(profile_dir: str | Path) -> list[Path]:
    """The .xplane.pb files of the newest session under ``profile_dir/plugins/profile``."""
    root = Path(profile_dir) / "plugins" / "profile"
    sessions = sorted(p for p in root.glob("*") if p.is_dir() and any(p.glob("*.xplane.pb"))) if root.is_dir() else []
    if not sessions:
        raise ProfileError(
            f"no profile found under `{root}` (expected plugins/profile/<session>/*.xplane.pb); "
            "capture one with `tfpilot profile CONFIG --steps A:B` or train.profile_steps"
        )
    return sorted(sessions[-1].glob("*.xplane.pb"))


def _normalise_loop_iterations(files: list[Path], workdir: Path) -> tuple[list[Path], bool]:
    """Copies of ``files`` in which xprof groups events by our step markers rather than by loop iterations.

    xprof (EventForest::ProcessTensorFlowLoop) treats every executor event that carries an
    ``iter_num`` stat as one iteration of a TF while loop, and when it finds any loop it groups
    events by loop iteration *instead of* by the ``Trace(..., _r=1)`` step markers
    (CreateEventGroups returns early). tfpilot's compiled step runs a ``tf.range`` loop over
    ``get_next_as_optional`` inside every call, so the markers get no group and the input-pipeline
    analyzer finds no steps. Zeroing ``iter_num`` (only when the session has step markers) turns
    the loop back into one group per marked call; the iterator ops stay connected because both
    sides of that (step_id, iter_num) link are zeroed alike. Returns (files, rewritten).
    """
    xplane_pb2 = _xplane_pb2()
    rewritten, changed_any = [], False
    for path in files:
        space = xplane_pb2.XSpace()
        space.ParseFromString(path.read_bytes())
        has_markers, changed = False, False
        for plane in space.planes:
            stat_ids = {metadata.name: key for key, metadata in plane.stat_metadata.items()}
            iteration_id, step_num_id = stat_ids.get("iter_num"), stat_ids.get("step_num")
            for line in plane.lines:
                for event in line.events:
                    for stat in event.stats:
                        if stat.metadata_id == step_num_id and step_num_id is not None:
                            has_markers = True
                        elif (
                            stat.metadata_id == iteration_id
                            and iteration_id is not None
                            and stat.WhichOneof("value") in ("int64_value", "uint64_value")
                        ):
                            if stat.int64_value or stat.uint64_value:
                                stat.int64_value = 0
                                changed = True
        if has_markers and changed:
            # xprof names the host after the file, so the copy keeps the file name.
            target = workdir / path.name
            target.write_bytes(space.SerializeToString())
            rewritten.append(target)
            changed_any = True
        else:
            rewritten.append(path)
    return rewritten, changed_any


def _xplane_pb2() -> Any:
    """TensorFlow's generated XSpace module, loaded from its file without importing ``tensorflow``.

    ``import tensorflow.tsl...`` runs tensorflow/__init__ (seconds of CPU, 25 s on a busy 2-core
    host): the doctor's parent process would pay a second TensorFlow import only to read the
    profile. The generated module needs protobuf alone, and registers the same descriptor that
    TensorFlow's copy does, so a later ``import tensorflow`` in this process shares its classes.
    """
    module = sys.modules.get("tensorflow.tsl.profiler.protobuf.xplane_pb2") or sys.modules.get(_XPLANE_MODULE)
    if module is not None:
        return module
    spec = importlib.util.find_spec("tensorflow")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    path = Path(locations[0], "tsl", "profiler", "protobuf", "xplane_pb2.py") if locations else None
    if path is None or not path.is_file():
        from tfpilot import _tf_private

        return _tf_private.xplane_pb2()
    file_spec = importlib.util.spec_from_file_location(_XPLANE_MODULE, path)
    assert file_spec is not None and file_spec.loader is not None
    module = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(module)
    sys.modules[_XPLANE_MODULE] = module
    return module


_ITERATOR_STATS = ("buffer_limit", "max_batch_results", "parallelism", "autotune", "cpu_budget")
# Measured steps the window keeps at least, whatever the drain read from the profile.
MIN_MEASURED_STEPS = 3


def iterator_stats(files: list[Path]) -> dict[str, Any]:
    """tf.data's iterator stats from the earliest event of each iterator: what the pipeline held when profiling began.

    tf.data attaches them to its iterator events: ``buffer_limit`` on Prefetch (an AUTOTUNE buffer's
    size at that moment), ``max_batch_results`` and ``parallelism`` on MapAndBatch and parallel maps,
    ``cpu_budget`` (the cap AUTOTUNE works under: the core count) on Root.
    """
    xplane_pb2 = _xplane_pb2()
    earliest: dict[str, tuple[int, dict[str, Any]]] = {}
    for path in files:
        space = xplane_pb2.XSpace()
        space.ParseFromString(path.read_bytes())
        for plane in space.planes:
            wanted = {key: m.name for key, m in plane.stat_metadata.items() if m.name in _ITERATOR_STATS}
            if not wanted:
                continue
            for line in plane.lines:
                for event in line.events:
                    name = plane.event_metadata[event.metadata_id].name
                    if not name.startswith("Iterator::"):
                        continue
                    at = line.timestamp_ns * 1000 + event.offset_ps
                    if name in earliest and earliest[name][0] <= at:
                        continue
                    values: dict[str, Any] = {}
                    for stat in event.stats:
                        key = wanted.get(stat.metadata_id)
                        if key is None:
                            continue
                        kind = stat.WhichOneof("value")
                        value = getattr(stat, kind) if kind else None
                        if kind == "ref_value":  # a string interned in the plane's stat metadata
                            value = plane.stat_metadata[value].name if value in plane.stat_metadata else None
                        values[key] = (value == "true") if key == "autotune" and isinstance(value, str) else value
                    if values:
                        earliest[name] = (at, values)
    iterators = {name: values for name, (_, values) in sorted(earliest.items())}
    budgets = [v["cpu_budget"] for v in iterators.values() if isinstance(v.get("cpu_budget"), int)]
    result: dict[str, Any] = {"iterators": {k: v for k, v in iterators.items() if set(v) - {"cpu_budget"}}}
    if budgets:
        result["cpu_budget"] = max(budgets)
    return result


def drain_from_stats(stats: dict[str, Any]) -> int | None:
    """Batches the pipeline could hold ready when profiling began: its prefetch buffers and MapAndBatch results.

    Only iterators on the main chain count (a prefetch inside an interleave's cycle, `[0]` in its name,
    holds elements of one file, not batches). None without such stats (an older TensorFlow, no pipeline).
    """
    total, seen = 0, False
    for name, values in stats.get("iterators", {}).items():
        if "[" in name:
            continue
        last = name.rsplit("::", 1)[-1]
        if last == "Prefetch" and isinstance(values.get("buffer_limit"), int):
            total, seen = total + max(values["buffer_limit"], 0), True
        elif last == "MapAndBatch" and isinstance(values.get("max_batch_results"), int):
            total, seen = total + max(values["max_batch_results"], 0), True
    return min(total, MAX_DRAIN_STEPS) if seen else None


def _measure_from(capture: dict[str, Any], stats: dict[str, Any]) -> dict[str, Any]:
    """The doctor's window guessed its drain (an AUTOTUNE buffer's size) when it opened; the profile says it."""
    if "drain_steps" not in capture or "start_step" not in capture or "stop_step" not in capture:
        return capture
    drain = drain_from_stats(stats)
    if drain is None:
        return capture
    start, stop = int(capture["start_step"]), int(capture["stop_step"])
    updated = dict(capture, drain_steps_read=drain, measure_from_guess=capture.get("measure_from"))
    # Steps served from those buffers are not measured, but at least MIN_MEASURED_STEPS are.
    updated["measure_from"] = max(start, min(start + drain, stop - MIN_MEASURED_STEPS))
    return updated


def _tool(files: list[Path], tool: str) -> Any:
    from xprof.convert import raw_to_tool_data

    with _quiet_native_logs():
        data, _ = raw_to_tool_data.xspace_to_tool_data([str(f) for f in files], tool, {})
    if data is None:
        raise ProfileError(
            f"xprof could not convert `{files[0]}` with tool `{tool}`; the profile may be empty or truncated"
        )
    return data


def _table_rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    ids = [col["id"] for col in table.get("cols") or []]
    return [
        {key: cell.get("v") if cell else None for key, cell in zip(ids, row["c"], strict=False)}
        for row in table.get("rows") or []
    ]


def _find_table(tables: list[dict[str, Any]], column: str) -> dict[str, Any]:
    for table in tables:
        if any(col["id"] == column for col in table.get("cols") or []):
            return table
    return {"cols": [], "rows": [], "p": {}}


def _as_json(data: Any) -> Any:
    return json.loads(data.decode() if isinstance(data, bytes) else data)


# ------------------------------------------------------------------------------ summary pieces
def _step_number(name: Any) -> int | None:
    """`train 7` (xprof's step name from our marker) -> 7."""
    tail = str(name).rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _measured_rows(rows: list[dict[str, Any]], measure_from: int | None, key: str) -> list[dict[str, Any]]:
    """Rows of steps >= measure_from (the window's drain steps are profiled, not measured); all if none is left."""
    if not measure_from:
        return rows
    kept = [r for r in rows if (_step_number(r.get(key)) or 0) >= measure_from]
    return kept or rows


def _step_breakdown(
    input_tables: list[dict[str, Any]], measure_from: int | None = None
) -> tuple[StepBreakdown, str, str]:
    table = _find_table(input_tables, "stepnum")
    properties = table.get("p") or {}
    per_step: list[dict[str, Any]] = []
    for row in _measured_rows(_table_rows(table), measure_from, "stepnum"):
        compute = sum(
            float(row.get(k) or 0.0)
            for k in ("deviceComputeTimeMs", "hostComputeTimeMs", "deviceToDeviceTimeMs", "deviceCollectivesTimeMs")
        )
        input_ms = float(row.get("infeedTimeMs") or 0.0)
        other = sum(
            float(row.get(k) or 0.0) for k in ("kernelLaunchTimeMs", "outfeedTimeMs", "compileTimeMs", "otherTimeMs")
        )
        per_step.append(
            {
                "step": str(row.get("stepnum")),
                "step_ms": float(row.get("stepTimeMs") or 0.0),
                "input_ms": input_ms,
                "compute_ms": compute,
                "other_ms": other,
            }
        )
    count = len(per_step)

    def mean(key: str) -> float:
        return sum(float(s[key]) for s in per_step) / count if count else 0.0

    step_ms = mean("step_ms")

    def percent(value: float) -> float:
        return 100.0 * value / step_ms if step_ms else 0.0

    breakdown = StepBreakdown(
        steps=count,
        step_ms=step_ms,
        input_ms=mean("input_ms"),
        compute_ms=mean("compute_ms"),
        other_ms=mean("other_ms"),
        input_percent=percent(mean("input_ms")),
        compute_percent=percent(mean("compute_ms")),
        other_percent=percent(mean("other_ms")),
        per_step=per_step,
    )
    return breakdown, str(properties.get("hardware_type", "")), str(properties.get("input_conclusion", ""))


def _input_stages(input_tables: list[dict[str, Any]]) -> list[InputStage]:
    rows = _table_rows(_find_table(input_tables, "opName"))
    stages = [
        InputStage(
            name=str(row["opName"]),
            stage=str(row["opName"]).split("::")[-1].split("[")[0],
            count=int(row.get("count") or 0),
            self_time_ms=float(row.get("selfTimeInMs") or 0.0),
            self_time_percent=100.0 * float(row.get("selfTimeInPercent") or 0.0),
        )
        for row in rows
    ]
    return sorted(stages, key=lambda s: s.self_time_ms, reverse=True)


def _op_stats(op_tables: list[dict[str, Any]]) -> tuple[list[OpStat], list[dict[str, Any]]]:
    # The second table excludes IDLE, so percentages are of busy time.
    table = op_tables[-1] if op_tables else {"cols": [], "rows": []}
    raw = [r for r in _table_rows(table) if r.get("type") != "IDLE"]
    ops = []
    for row in raw:
        device = row.get("host_or_device") == "Device"
        percent = row.get("device_total_self_time_percent" if device else "host_total_self_time_percent") or 0.0
        ops.append(
            OpStat(
                operation=str(row.get("operation")),
                type=canonical_op_type(str(row.get("type"))),
                raw_type=str(row.get("type")),
                host_or_device=str(row.get("host_or_device")),
                occurrences=int(row.get("occurrences") or 0),
                total_self_time_ms=float(row.get("total_self_time") or 0.0) / 1e3,
                avg_self_time_us=float(row.get("avg_self_time") or 0.0),
                self_time_percent=100.0 * float(percent),
                eager=str(row.get("eager")).lower() in ("eager", "true", "1"),
            )
        )
    return sorted(ops, key=lambda op: op.total_self_time_ms, reverse=True), raw


# Ops run eagerly on CPU execute inline from Python: xprof's framework_op_stats has no row for them (the trace has
# one `EagerLocalExecute: <type>` event per op, its kernel in an `EagerKernelExecute` event inside it).
_EAGER_EXECUTE_PREFIX = "EagerLocalExecute: "
_EAGER_KERNEL = "EagerKernelExecute"


def eager_ops_from_trace(trace: Any) -> list[OpStat]:
    """Host ops run eagerly, from the trace viewer's events: count per op type, self time = their kernels' time.

    The time between the kernels (Python, dispatch, input validation) is what tf.function removes, so it is not
    the ops' own work; an op whose kernel event is missing counts with no self time.
    """
    data = _as_json(trace) if isinstance(trace, (str, bytes)) else trace
    events = data.get("traceEvents", []) if isinstance(data, dict) else data or []
    by_thread: dict[Any, list[tuple[float, float, str]]] = {}
    for event in events:
        name = event.get("name", "")
        if event.get("ph") != "X" or not (name.startswith(_EAGER_EXECUTE_PREFIX) or name == _EAGER_KERNEL):
            continue
        by_thread.setdefault((event.get("pid"), event.get("tid")), []).append(
            (float(event.get("ts", 0.0)), float(event.get("dur", 0.0)), name)
        )
    counts: dict[str, int] = {}
    self_us: dict[str, float] = {}
    for spans in by_thread.values():
        spans.sort(key=lambda span: (span[0], -span[1]))
        open_type, open_end = None, 0.0
        for start, duration, name in spans:
            if name.startswith(_EAGER_EXECUTE_PREFIX):
                open_type, open_end = name[len(_EAGER_EXECUTE_PREFIX) :].strip(), start + duration
                if "_inference_" in open_type:
                    open_type = None  # a tf.function call: its kernel is the whole graph, not one op
                    continue
                counts[open_type] = counts.get(open_type, 0) + 1
            elif open_type is not None and start <= open_end:
                self_us[open_type] = self_us.get(open_type, 0.0) + duration
    total_us = sum(self_us.values()) or 1.0
    ops = [
        OpStat(
            operation=raw,
            type=canonical_op_type(raw),
            raw_type=raw,
            host_or_device="Host",
            occurrences=count,
            total_self_time_ms=self_us.get(raw, 0.0) / 1e3,
            avg_self_time_us=self_us.get(raw, 0.0) / count,
            self_time_percent=100.0 * self_us.get(raw, 0.0) / total_us,
            eager=True,
        )
        for raw, count in counts.items()
    ]
    return sorted(ops, key=lambda op: (op.total_self_time_ms, op.occurrences), reverse=True)


_GET_NEXT_OPS = {
    "IteratorGetNext",
    "IteratorGetNextAsOptional",
    "IteratorGetNextSync",
    "MultiDeviceIteratorGetNextFromShard",
}


def _breakdown_from_capture(capture: dict[str, Any], ops: list[OpStat]) -> StepBreakdown:
    """xprof finds no steps for in-graph get_next_as_optional loops: use wall-clock step times
    and the get_next ops' self time (the wait for tf.data) instead."""
    pairs = list(
        zip(capture.get("steps") or range(len(capture["step_times_ms"])), capture["step_times_ms"], strict=False)
    )
    measured = [(s, t) for s, t in pairs if s >= int(capture.get("measure_from") or 0)] or pairs
    times = [t for _, t in measured]
    step_ms = sum(times) / len(times)
    input_ms = min(sum(op.total_self_time_ms for op in ops if op.type in _GET_NEXT_OPS) / len(pairs), step_ms)
    compute_ms = min(
        sum(op.total_self_time_ms for op in ops if op.type not in _GET_NEXT_OPS and op.type != "Dataset") / len(pairs),
        step_ms - input_ms,
    )
    other_ms = max(step_ms - input_ms - compute_ms, 0.0)

    def percent(v):
        return 100.0 * v / step_ms if step_ms else 0.0

    return StepBreakdown(
        steps=len(times),
        step_ms=step_ms,
        input_ms=input_ms,
        compute_ms=compute_ms,
        other_ms=other_ms,
        input_percent=percent(input_ms),
        compute_percent=percent(compute_ms),
        other_percent=percent(other_ms),
        per_step=[{"step": str(s), "step_ms": t, "source": "capture"} for s, t in measured],
    )


def _write_op_stats_csv(path: Path, ops: list[OpStat]) -> None:
    buffer = io.StringIO()
    fields = [f.name for f in dataclasses.fields(OpStat)]
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    for op in ops:
        writer.writerow(dataclasses.asdict(op))
    atomic_write_text(path, buffer.getvalue())


# ------------------------------------------------------------------------------ entry point
def summarize_profile(profile_dir: str | Path, *, top_n: int = 20) -> ProfileSummary:
    """Convert the newest session under ``profile_dir`` and write summary.json, trace.json.gz, op_stats.csv."""
    profile_dir = Path(profile_dir)
    files = find_xplane_files(profile_dir)
    with tempfile.TemporaryDirectory(prefix="tfpilot-xplane-") as workdir:
        converted, _ = _normalise_loop_iterations(files, Path(workdir))
        input_tables = _as_json(_tool(converted, "input_pipeline_analyzer"))
        op_tables = _as_json(_tool(converted, "framework_op_stats"))
        trace = _tool(converted, "trace_viewer")
    try:
        stats = iterator_stats(files)
    except Exception:  # an xplane this protobuf cannot read: the watcher's guess of the drain stands
        stats = {}
    capture = _measure_from(read_capture(profile_dir), stats)
    steps, hardware, conclusion = _step_breakdown(input_tables, capture.get("measure_from"))
    ops, _ = _op_stats(op_tables)
    if not any(op.eager for op in ops):
        # An uncompiled step's ops are missing from xprof's op table on CPU: read them from the trace when they
        # outnumber the graph ops it has (a compiled step's few eager ops between calls change nothing).
        eager = eager_ops_from_trace(trace)
        graph_host_ops = sum(op.occurrences for op in ops if op.host_or_device == "Host" and op.type != "Dataset")
        if sum(op.occurrences for op in eager) > graph_host_ops:
            ops = sorted([*ops, *eager], key=lambda op: (op.total_self_time_ms, op.occurrences), reverse=True)
    stages = _input_stages(input_tables)
    captured = int(capture.get("steps_captured") or steps.steps or 1)
    host_ops = [op for op in ops if op.host_or_device == "Host" and op.type != "Dataset"]
    if not steps.steps and capture.get("step_times_ms"):
        steps = _breakdown_from_capture(capture, ops)

    trace_path, csv_path, summary_path = (
        profile_dir / TRACE_FILE,
        profile_dir / OP_STATS_FILE,
        profile_dir / SUMMARY_FILE,
    )
    atomic_write_bytes(trace_path, gzip.compress(trace.encode() if isinstance(trace, str) else trace, compresslevel=5))
    _write_op_stats_csv(csv_path, ops)
    summary = ProfileSummary(
        profile_dir=str(profile_dir),
        session=str(files[0].parent.name),
        hardware_type=hardware,
        steps=steps,
        top_ops=[op for op in ops if op.type != "Dataset"][:top_n],
        host_python_ops=[op for op in ops if op.type in HOST_PYTHON_OP_TYPES],
        input_stages=stages,
        op_occurrences_per_step=sum(op.occurrences for op in host_ops) / captured,
        host_op_self_time_ms_per_step=sum(op.total_self_time_ms for op in host_ops) / captured,
        input_conclusion=conclusion,
        capture=capture,
        pipeline_stats=stats,
        files={
            "trace": TRACE_FILE,
            "op_stats": OP_STATS_FILE,
            "summary": SUMMARY_FILE,
            "xplane": [str(f.relative_to(profile_dir)) for f in files],
        },
    )
    atomic_write_json(summary_path, summary.to_dict())
    return summary


def read_capture(profile_dir: str | Path) -> dict[str, Any]:
    path = Path(profile_dir) / CAPTURE_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def load_summary(profile_dir: str | Path) -> ProfileSummary | None:
    path = Path(profile_dir) / SUMMARY_FILE
    return ProfileSummary.from_dict(json.loads(path.read_text())) if path.exists() else None
