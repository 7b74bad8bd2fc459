"""DOC-RETRACING: a tf.function traced again and again, and why.

Each trace re-runs the Python function and rebuilds the graph (often slower than the step
itself). The watcher stores each trace's argument signature; the rule counts *distinct*
signatures, not traces, because two healthy patterns trace more than once:

- the first call of a step that creates variables (Keras' Adam builds its slots) is traced a
  second time with the same arguments;
- the last, smaller batch of an epoch adds one leading dimension (64 rows, then 8).

So a warning needs a Python scalar that changed, or more signatures than one shape plus one extra
leading dimension. A new ``tf.function`` object created for every call (``tf.function(step)(x)``
inside the loop) is traced on every call whatever the arguments: it shows as many function objects
wrapping one Python function, each traced once.
"""

from __future__ import annotations

import json

from tfpilot.diagnose.rules.base import Observations
from tfpilot.diagnose.watchers import FunctionRecord
from tfpilot.findings import Finding, Severity

CODE = "DOC-RETRACING"
# Fewer new function objects than this is no pattern (a function rebuilt once, e.g. per evaluation).
MIN_NEW_FUNCTIONS = 3
# One shape plus one extra leading dimension (the last partial batch).
MAX_LEADING_DIMENSIONS = 2


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
                message=f"`{function.name}` was traced for {len(signatures)} distinct argument signatures "
                f"({function.tracing_count} traces in {function.calls} calls)"
                + (f": {described}" if described else ""),
                location=function.location,
                evidence={
                    "function": function.name,
                    "tracing_count": function.tracing_count,
                    "distinct_signatures": len(signatures),
                    "calls": function.calls,
                    "changed": changes,
                },
                fix=fix,
            )
        )
    return findings
