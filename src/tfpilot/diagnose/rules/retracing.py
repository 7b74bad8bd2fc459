"""DOC-RETRACING: a tf.function traced again and again, and why.

Each trace re-runs the Python function and rebuilds the graph (often slower than the step
itself). The watcher stores each trace's argument signature; the rule counts *distinct*
signatures, not traces, because two healthy patterns trace more than once:

- the first call of a step that creates variables (Keras' Adam builds its slots) is traced a
  second time with the same arguments;
- the last, smaller batch of an epoch adds one leading dimension (64 rows, then 8).

So a warning needs a Python scalar that changed, or more signatures than one shape plus one extra
leading dimension. Retracing that stops (a few traces over many calls) is info, and under
``reduce_retracing=True`` not reported: TensorFlow generalises the varying dimensions after a
retrace, which is the fix its own retracing warning recommends. A new ``tf.function`` object
created for every call (``tf.function(step)(x)`` inside the loop) is traced on every call whatever
the arguments: it shows as many function objects wrapping one Python function, each traced once.
"""

from __future__ import annotations

import ast
import json

from tfpilot.diagnose.rules.base import Observations
from tfpilot.diagnose.watchers import FunctionRecord
from tfpilot.findings import Finding, Severity

CODE = "DOC-RETRACING"
# Fewer new function objects than this is no pattern (a function rebuilt once, e.g. per evaluation).
MIN_NEW_FUNCTIONS = 3
# One shape plus one extra leading dimension (the last partial batch).
MAX_LEADING_DIMENSIONS = 2
# Bounded retracing, not a problem: at most this many traces, each followed by this many calls or more on
# average (3 traces in 120 calls is bounded; 8 traces in 8 calls is a retrace per call).
MAX_BOUNDED_TRACES = 4
BOUNDED_CALLS_PER_TRACE = 10


def _distinct(traces: list[list[dict]]) -> list[list[dict]]:
    seen: dict[str, list[dict]] = {}
    for trace in traces:
        seen.setdefault(json.dumps(trace, sort_keys=True), trace)
    return list(seen.values())


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


def _only_partial_batch(signatures: list[list[dict]]) -> bool:
    """Whether the signatures differ only in the tensors' leading dimension, with at most two values of it."""

    def without_leading(trace: list[dict]) -> str:
        stripped = []
        for argument in trace:
            shape = argument.get("shape")
            if argument.get("kind") in ("tensor", "array") and shape:
                argument = {**argument, "shape": [None, *shape[1:]]}
            stripped.append(argument)
        return json.dumps(stripped, sort_keys=True)

    if len({without_leading(t) for t in signatures}) > 1:
        return False
    leading = {
        tuple(a["shape"][0] for a in t if a.get("kind") in ("tensor", "array") and a.get("shape")) for t in signatures
    }
    return len(leading) <= MAX_LEADING_DIMENSIONS


def _new_function_per_call(function: FunctionRecord, location: str) -> Finding:
    site = function.call_site or function.location
    return Finding(
        code=CODE,
        severity=Severity.WARNING,
        title="tf.function retracing",
        message=(
            f"a new tf.function wrapping `{function.name}` was created {function.instances} times "
            f"for {function.calls} calls (called at {site}): each new function object is traced again, "
            f"{function.tracing_count} traces in all"
        ),
        location=site or location,
        evidence={
            "function": function.name,
            "new_functions": function.instances,
            "calls": function.calls,
            "tracing_count": function.tracing_count,
            "call_site": function.call_site,
            "changed": [],
        },
        fix=f"create the tf.function once, outside the loop (decorate `{function.name}` with @tf.function where it is "
        "defined, or assign step = tf.function(fn) before the loop) and call that one object every step",
    )


def _dimensions_that_varied(values: list[str]) -> list[int]:
    shapes = []
    for value in values:
        try:
            shape = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            continue
        if isinstance(shape, list):
            shapes.append(shape)
    if not shapes or len({len(shape) for shape in shapes}) != 1:
        return []
    return [i for i in range(len(shapes[0])) if len({shape[i] for shape in shapes}) > 1]


def _shape_fix(change: dict) -> str:
    """input_signature advice for one argument whose tensor shape varied, naming the dimensions that did."""
    argument = change["argument"]
    dimensions = _dimensions_that_varied(change["values"])
    if dimensions:
        where = ", ".join(str(d) for d in dimensions)
        return f"`{argument}` (a tensor whose dimension {where} varied): tf.TensorSpec with None in dimension {where}"
    return f"`{argument}` (a tensor whose rank varied): tf.TensorSpec(shape=None) or one rank for every call"


def _fix(changes: list[dict], function: FunctionRecord) -> str:
    """Advice naming each argument that varied and the kind of value it was."""
    parts = []
    python = [c for c in changes if c["kind"] == "python scalar"]
    if python:
        names = ", ".join(f"`{c['argument']}`" for c in python)
        parts.append(
            f"pass {names} (a Python scalar that took a new value each time) as a tensor (tf.constant(value)) or a "
            "tf.Variable you assign to, so one graph serves every value"
        )
    shapes = [c for c in changes if c["kind"] == "shape"]
    if shapes:
        specs = "; ".join(_shape_fix(c) for c in shapes)
        parts.append(
            f"give `{function.name}` an input_signature for {specs}"
            + ("" if function.reduce_retracing else ", or tf.function(reduce_retracing=True)")
            + "; pad or bucket batches to few shapes"
        )
    others = [c for c in changes if c["kind"] not in ("python scalar", "shape")]
    for change in others:
        parts.append(
            f"`{change['argument']}` (a Python {change['kind']} value that differed between calls) is part of the "
            "trace key: pass its contents as tensors, or keep one object for every call"
        )
    if not parts:
        parts.append(f"give `{function.name}` an input_signature so one graph serves every call")
    return "; ".join(parts)


def _bounded(function: FunctionRecord) -> bool:
    """A few traces over many calls: each trace cost once, the steady state runs one graph."""
    return function.tracing_count <= MAX_BOUNDED_TRACES and function.calls >= BOUNDED_CALLS_PER_TRACE * max(
        function.tracing_count, 1
    )


def check(observations: Observations) -> list[Finding]:
    watch = observations.watch
    if watch is None:
        return []
    findings = []
    for function in watch.functions:
        if function.instances >= MIN_NEW_FUNCTIONS:
            findings.append(_new_function_per_call(function, observations.location))
            continue
        signatures = _distinct(function.traces)
        if len(signatures) < 2:
            continue
        changes = _changes(signatures)
        python = [c for c in changes if c["kind"] == "python scalar"]
        if not python and _only_partial_batch(signatures):
            continue
        bounded = _bounded(function)
        if bounded and function.reduce_retracing:
            continue  # the fix TensorFlow's own warning recommends, doing its job: shapes generalised after a retrace
        described = "; ".join(
            f"{c['kind']} argument `{c['argument']}` took {', '.join(map(str, c['values']))}" for c in changes
        )
        message = (
            f"`{function.name}` was traced for {len(signatures)} distinct argument signatures "
            f"({function.tracing_count} traces in {function.calls} calls)" + (f": {described}" if described else "")
        )
        if bounded:
            message += "; the traces stopped (bounded retracing): each cost once, the steady state runs one graph"
        findings.append(
            Finding(
                code=CODE,
                severity=Severity.INFO if bounded else Severity.WARNING,
                title="tf.function retracing",
                message=message,
                location=function.location,
                evidence={
                    "function": function.name,
                    "tracing_count": function.tracing_count,
                    "distinct_signatures": len(signatures),
                    "calls": function.calls,
                    "changed": changes,
                    "bounded": bounded,
                    "reduce_retracing": function.reduce_retracing,
                },
                fix=_fix(changes, function),
            )
        )
    return findings
