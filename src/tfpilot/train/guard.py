"""The NaN guard's host half: replay the offending batch with check_numerics, apply the policy.

The compiled step (step.py) already refused to apply the non-finite update and stopped the
in-graph loop at that step, so the model still holds exactly the weights that produced the bad
value. Replaying that batch with tf.debugging.enable_check_numerics (which instruments every op
of graphs traced after it is enabled, at about twice the step time, hence only now) names the
first op that produced NaN/Inf, the layer whose name scope holds it, and the user's source line.

Policies (train.nan_policy), each bounded by train.nan_max_retries consecutive non-finite batches
(a batch that trains normally resets the count, so one bad example that comes back every epoch
never stops a long run; a run whose every batch is bad stops after the limit):
  stop        record the finding and stop training (TrainError);
  skip_batch  record the skipped batch and keep going (the update was never applied);
  rollback    restore the last good checkpoint and continue from there, leaving the batch out.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from tfpilot import _tf_private
from tfpilot.errors import TrainError
from tfpilot.findings import Finding, Severity

__all__ = [
    "NanAction",
    "NanEvent",
    "NanGuard",
    "replay_with_check_numerics",
    "parse_check_numerics",
    "under_check_numerics",
]

_OP = re.compile(r'Detected (?:Infinity or NaN|NaN|Infinity)[^"]*"(?P<op>[A-Za-z0-9_]+)"')
_NODE = re.compile(r"\{\{node (?P<node>[^}]+)\}\}")
_FRAME = re.compile(r"^\s*\+\s+(?P<path>.+?) \(L(?P<line>\d+)\) (?P<function>\S+)\s*$")
# Frames from these places are library internals, never "the user's source line".
_LIBRARY_PARTS = ("site-packages", "dist-packages", f"{Path(sys.prefix).name}/lib", "/lib/python3")


class NanAction(str, enum.Enum):
    """What the guard did with a non-finite batch (string-valued: it is written to findings.json)."""

    STOPPED = "stopped"
    SKIPPED = "skipped"
    ROLLED_BACK = "rolled_back"


@dataclasses.dataclass
class NanEvent:
    epoch: int
    batch_index: int  # position of the batch within its epoch (0-based); -1 when not known (parameter servers)
    global_step: int
    action: NanAction


def _is_library(path: str) -> bool:
    return path.startswith("...") or any(part in path for part in _LIBRARY_PARTS)


def _layer_names(model: keras.Model) -> list[str]:
    return [layer.name for layer in _tf_private.flatten_layers(model)]


def parse_check_numerics(message: str, *, model: keras.Model | None = None) -> dict[str, Any]:
    """Pull op, graph node, layer and user source line out of a check_numerics error message."""
    evidence: dict[str, Any] = {}
    if match := _OP.search(message):
        evidence["op"] = match["op"]
    if match := _NODE.search(message):
        node = match["node"].removesuffix("/CheckNumericsV2").removesuffix("/CheckNumerics")
        evidence["node"] = node
        if model is not None:
            known = set(_layer_names(model))
            # Keras appends `_1`, `_2` to name scopes on re-entry; the innermost matching scope wins.
            for part in reversed(node.split("/")[:-1]):
                base = re.sub(r"_\d+$", "", part)
                if part in known or base in known:
                    evidence["layer"] = part if part in known else base
                    break
    frames = [m.groupdict() for line in message.splitlines() if (m := _FRAME.match(line))]
    user = [f for f in frames if not _is_library(f["path"])]
    tfpilot_root = str(Path(__file__).resolve().parents[1])
    outside_tfpilot = [f for f in user if not f["path"].startswith(tfpilot_root)]
    candidates = outside_tfpilot or user
    chosen = candidates[-1] if candidates else None
    if chosen is not None:
        evidence["source"] = f"{chosen['path']}:{chosen['line']}"
        evidence["function"] = chosen["function"]
        try:
            evidence["source_line"] = Path(chosen["path"]).read_text().splitlines()[int(chosen["line"]) - 1].strip()
        except (OSError, IndexError):
            pass
    return evidence


def nonfinite_inputs(batch: Any) -> dict[str, Any] | None:
    """Where the batch itself holds NaN/Inf (features, labels or sample weights), or None.

    Checked before any replay: a NaN that arrives with the data is the data's problem, and the
    op that first touches it (a Cast, the first MatMul) is not its cause."""
    if not isinstance(batch, tuple):
        batch = (batch,)  # features only (a VAE's fit(x)): Keras hands the step x itself
    flat = keras.tree.flatten_with_path(batch)
    for path, value in flat:
        if value is None or not hasattr(value, "dtype"):
            continue
        tensor = tf.convert_to_tensor(value)
        if not tensor.dtype.is_floating:
            continue
        bad = tf.logical_not(tf.math.is_finite(tensor))
        if not bool(tf.reduce_any(bad)):
            continue
        rank = tensor.shape.rank or 0
        rows = tf.where(tf.reduce_any(bad, axis=list(range(1, rank))) if rank > 1 else bad)[:, 0] if rank else []
        parts = [str(p) for p in path]
        role = {"0": "features", "1": "labels", "2": "sample weights"}.get(parts[0], "batch") if parts else "batch"
        if role == "features" and len(parts) > 1 and isinstance(batch[0], list | tuple):
            # A list of inputs (a seq2seq model's [encoder, decoder]): the position, named as the
            # serving signature names unnamed inputs (`input_0`), not a bare `0`.
            parts[1] = f"input_{parts[1]}"
        name = "/".join(parts[1:]) or role
        return {
            "input": name if role == "features" else role,
            "input_role": role,
            "input_rows": [int(r) for r in (rows.numpy().tolist() if hasattr(rows, "numpy") else rows)][:10],
            "reproduced": True,
        }
    return None


def under_check_numerics(run: Callable[[], Any], *, model: keras.Model | None) -> tuple[dict[str, Any] | None, Any]:
    """Call `run` (which traces a fresh tf.function, so its graph is instrumented) with
    check_numerics on: (what it names, None) when an op produced NaN/Inf, else (None, the result)."""
    tf.debugging.enable_check_numerics(stack_height_limit=60, path_length_limit=400)
    try:
        return None, run()
    except (tf.errors.InvalidArgumentError, tf.errors.OpError) as error:
        evidence = parse_check_numerics(error.message, model=model)
        evidence["reproduced"] = True
        return evidence, None
    finally:
        tf.debugging.disable_check_numerics()


def replay_with_check_numerics(step_functions, features, labels) -> dict[str, Any]:
    """Run forward and backward on one batch with check_numerics; return what it names.

    Nothing is applied to the weights. Runs on the default device outside any strategy (the
    variables' primary copies hold the same values on every replica).
    """
    model = step_functions.model
    in_data = nonfinite_inputs((features, labels))
    if in_data is not None:
        return in_data

    @tf.function
    def replay(features, labels):
        return step_functions.loss_and_gradients(features, labels)[0]

    evidence, loss = under_check_numerics(lambda: replay(features, labels), model=model)
    if evidence is not None:
        return evidence
    # The step was non-finite but this replay is not: randomness (dropout) or a distributed
    # reduction that a single device does not repeat.
    return {"reproduced": False, "replay_loss": float(loss)}


def _batch(index: int) -> str:
    # -1: a step scheduled asynchronously on a parameter-server worker, whose batch is not known.
    return f"batch {index}" if index >= 0 else "batch unknown"


class NanGuard:
    """Apply `train.nan_policy` to each non-finite step and keep the findings."""

    def __init__(self, *, policy: str, max_retries: int, location: str) -> None:
        self.policy = policy
        self.max_retries = max_retries
        self.location = location
        self.events: list[NanEvent] = []
        self.evidence: dict[str, Any] | None = None
        self.findings: list[Finding] = []
        # Non-finite batches since the last batch that trained normally.
        self.consecutive = 0

    def note_progress(self) -> None:
        """A batch trained normally since the last non-finite one."""
        self.consecutive = 0

    @property
    def skipped(self) -> set[tuple[int, int]]:
        return {(e.epoch, e.batch_index) for e in self.events if e.action in (NanAction.SKIPPED, NanAction.ROLLED_BACK)}

    def _cause(self) -> str:
        ev = self.evidence or {}
        if self.events and all(e.batch_index < 0 for e in self.events):
            return "not replayed (an asynchronous parameter-server step: its batch is not known)"
        if "input" in ev:
            rows = ev.get("input_rows") or []
            where = f" (rows {rows} of the batch)" if rows else ""
            if ev.get("input_role") == "features":
                return f"the batch itself held NaN/Inf in its input `{ev['input']}`{where}"
            return f"the batch itself held NaN/Inf in its {ev['input']}{where}"
        if not ev.get("reproduced"):
            detail = ev.get("replay")
            return "not located: the replay with check_numerics did not reproduce it" + (
                f" ({detail})" if detail else ""
            )
        parts = [f"op `{ev.get('op', '?')}`"]
        if "layer" in ev:
            parts.append(f"in layer `{ev['layer']}`")
        if "source" in ev:
            parts.append(f"at {ev['source']}")
        return "first produced by " + " ".join(parts)

    def on_nonfinite(
        self, *, epoch: int, batch_index: int, global_step: int, evidence: dict[str, Any] | None
    ) -> NanAction:
        """Record the event; return the action (`skipped` or `rolled_back`) or raise TrainError to stop."""
        if evidence is not None and self.evidence is None:
            self.evidence = evidence
        exhausted = self.consecutive >= self.max_retries
        self.consecutive += 1
        action = (
            NanAction.STOPPED
            if self.policy == "stop" or exhausted
            else (NanAction.SKIPPED if self.policy == "skip_batch" else NanAction.ROLLED_BACK)
        )
        event = NanEvent(epoch=epoch, batch_index=batch_index, global_step=global_step, action=action)
        self.events.append(event)
        if action is NanAction.STOPPED:
            reason = (
                f"retry limit reached: {self.consecutive} non-finite batches in a row, "
                f"train.nan_max_retries={self.max_retries}"
                if exhausted and self.policy != "stop"
                else "train.nan_policy=stop"
            )
            self.findings.append(
                Finding(
                    code="TRAIN-NONFINITE",
                    severity=Severity.ERROR,
                    title="Non-finite loss or gradient",
                    message=(
                        f"step {global_step} (epoch {epoch}, {_batch(batch_index)}) produced a NaN/Inf loss or gradient, "
                        f"{self._cause()}; the update was not applied and training stopped ({reason})"
                    ),
                    location=(self.evidence or {}).get("source", self.location),
                    evidence={
                        **(self.evidence or {}),
                        **dataclasses.asdict(event),
                        "policy": self.policy,
                        "skipped_batches": [dataclasses.asdict(e) for e in self.events[:-1]],
                    },
                    fix="fix the op named above (e.g. clamp the input of Log/Sqrt/division), check the batch for NaN "
                    "inputs, lower the learning rate or enable train.clip_norm; or set train.nan_policy: skip_batch",
                )
            )
            raise TrainError(
                f"training stopped: non-finite loss or gradient at step {global_step}, {self._cause()} "
                f"({reason}); see findings.json"
            )
        return action

    def summary_findings(self) -> list[Finding]:
        """One finding for the batches skipped or rolled back in a run that went on."""
        kept = [e for e in self.events if e.action is not NanAction.STOPPED]
        if not kept:
            return []
        return [
            Finding(
                code="TRAIN-SKIPPED-BATCHES",
                severity=Severity.WARNING,
                title="Batches skipped after non-finite loss or gradient",
                message=(
                    f"{len(kept)} batch(es) produced NaN/Inf and were {'skipped' if self.policy == 'skip_batch' else 'rolled back'}; "
                    f"the first: {self._cause()}"
                ),
                location=(self.evidence or {}).get("source", self.location),
                evidence={
                    **(self.evidence or {}),
                    "policy": self.policy,
                    "skipped_batches": [dataclasses.asdict(e) for e in kept],
                },
                fix="inspect the named op and batches; clamp the op's input or clean the data so no batch needs skipping",
            )
        ]
