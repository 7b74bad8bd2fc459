"""DOC-RETRACING: a tf.function traced again and again, and why.

Each trace re-runs the Python function and rebuilds the graph (often slower than the step
itself). The watcher stores each trace's argument signature; comparing them names what changed:
a Python scalar (every new value is a new signature) or a tensor shape.
"""

from __future__ import annotations

from tfpilot.diagnose.rules.base import Observations
from tfpilot.findings import Finding, Severity

CODE = "DOC-RETRACING"
# Two traces for shapes is normal (e.g. the last, smaller batch); Python scalars are never normal.
MAX_SHAPE_TRACES = 2


def _changes(traces: list[list[dict]]) -> list[dict]:
    changes = []
    for position in range(min(len(t) for t in traces)):
        column = [t[position] for t in traces]
        first = column[0]
        if all(c == first for c in column):
            continue
        if first["kind"] == "python":
            values = list(dict.fromkeys(c.get("value") for c in column))
            changes.append({"argument": first["name"], "kind": "python scalar", "values": values[:6]})
        elif first["kind"] in ("tensor", "array"):
            shapes = list(dict.fromkeys(str(c.get("shape")) for c in column))
            changes.append({"argument": first["name"], "kind": "shape", "values": shapes[:6]})
        else:
            changes.append({"argument": first["name"], "kind": first["kind"], "values": []})
    return changes


def check(observations: Observations) -> list[Finding]:
    watch = observations.watch
    if watch is None:
        return []
    findings = []
    for function in watch.functions:
        if function.tracing_count < 2 or len(function.traces) < 2:
            continue
        changes = _changes(function.traces)
        python = [c for c in changes if c["kind"] == "python scalar"]
        if not python and function.tracing_count <= MAX_SHAPE_TRACES:
            continue
        described = "; ".join(
            f"{c['kind']} argument `{c['argument']}` took {', '.join(map(str, c['values']))}" for c in changes
        )
        if python:
            fix = (
                f"pass {', '.join('`' + c['argument'] + '`' for c in python)} as a tensor (tf.constant(value)) or a "
                "tf.Variable you assign to, so one graph serves every value"
            )
        else:
            fix = "give the function an input_signature with None for the varying dimensions, or tf.function(reduce_retracing=True); pad or bucket batches to few shapes"
        findings.append(
            Finding(
                code=CODE,
                severity=Severity.WARNING,
                title="tf.function retracing",
                message=f"`{function.name}` was traced {function.tracing_count} times in {function.calls} calls"
                + (f": {described}" if described else ""),
                location=function.location,
                evidence={
                    "function": function.name,
                    "tracing_count": function.tracing_count,
                    "calls": function.calls,
                    "changed": changes,
                },
                fix=fix,
            )
        )
    return findings
