"""What a tf.data pipeline is made of, read from the Dataset objects the script iterates.

The watcher describes every dataset the script makes an eager iterator over. The description decides
where the profile window goes (a pipeline with ``cache()`` is only judged once its first epoch has
filled the cache; steps served from a prefetch buffer filled before the profiler started are not
measured) and what the fix texts may advise (nothing the pipeline already does).

Stages are read by class name (``_ParallelMapDataset``, ``CacheDataset``, ...) and the tensors their
constructors keep (``_num_parallel_calls``, ``_buffer_size``, ``_batch_size``): private TensorFlow
attributes, so every read is guarded and an unknown stage only makes the description less complete.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from tfpilot import _tf_private

__all__ = ["PipelineStage", "PipelineShape", "describe_dataset", "AUTOTUNE"]

AUTOTUNE = -1
# Prefetch buffers and in-flight parallel calls the window lets drain before it measures, at most.
MAX_DRAIN_STEPS = 16
# An AUTOTUNE prefetch starts with a small buffer and grows it only while the consumer finds it empty.
AUTOTUNE_PREFETCH_DRAIN = 2
# ... and may have grown by the time the profiler starts (under load the injected prefetch's buffer held 2,
# and on a loaded CI host 4, where 1 was guessed, so a default window measured 9 steps, not 10): each
# AUTOTUNE buffer gets this many extra profiled steps, so the drain the profile reads later still leaves the
# requested steps measured. Profiling a few more steps costs little; measuring fewer than asked misleads.
AUTOTUNE_DRAIN_SLACK = 4
# Stages above a repeat that keep one output element per input element (so an epoch's length carries through).
_ONE_TO_ONE = {"Map", "ParallelMap", "Prefetch", "Options", "Take", "Cache", "Assert", "MaxIntraOpParallelism"}
_NAMES = {
    "_MapDataset": "Map",
    "_ParallelMapDataset": "ParallelMap",
    "_InterleaveDataset": "Interleave",
    "_ParallelInterleaveDataset": "ParallelInterleave",
    "_FlatMapDataset": "FlatMap",
    "_BatchDataset": "Batch",
    "_ParallelBatchDataset": "ParallelBatch",
    "_PaddedBatchDataset": "PaddedBatch",
    "CacheDataset": "Cache",
    "_PrefetchDataset": "Prefetch",
    "_RepeatDataset": "Repeat",
    "_TakeDataset": "Take",
    "_SkipDataset": "Skip",
    "_ShuffleDataset": "Shuffle",
    "_FilterDataset": "Filter",
    "_OptionsDataset": "Options",
    "_UnbatchDataset": "Unbatch",
    "_GeneratorDataset": "Generator",
    "TensorSliceDataset": "TensorSlice",
    "_TensorSliceDataset": "TensorSlice",
    "RangeDataset": "Range",
    "_RangeDataset": "Range",
    "TFRecordDatasetV2": "TFRecord",
    "_TFRecordDataset": "TFRecord",
}


@dataclasses.dataclass
class PipelineStage:
    kind: str  # Map, ParallelMap, Cache, Prefetch, Batch, ... or the class name when unknown
    parallel: int | None = None  # num_parallel_calls (-1 = AUTOTUNE) of parallel stages
    buffer: int | None = None  # prefetch buffer size (-1 = AUTOTUNE)
    batch: int | None = None
    count: int | None = None  # repeat count (-1 = forever), take count
    # A map whose function is "random" (random ops, or seeds read from a generator's state: Keras' random layers)
    # or otherwise "stateful" (py_function, variables): its output changes between epochs, so caching it would
    # freeze it. None: deterministic, or not a map.
    state: str | None = None


@dataclasses.dataclass
class PipelineShape:
    """A pipeline, output stage first, and what follows from it."""

    stages: list[PipelineStage]
    cardinality: int | None  # elements per iterator (None: infinite or unknown)
    epoch_steps: int | None  # elements until a cache below a repeat has been read through once
    generator: bool = False

    @property
    def kinds(self) -> list[str]:
        return [s.kind for s in self.stages]

    @property
    def cached(self) -> bool:
        return "Cache" in self.kinds

    @property
    def prefetched(self) -> bool:
        return "Prefetch" in self.kinds

    def has(self, kind: str) -> bool:
        return kind in self.kinds

    @property
    def random_or_stateful_maps(self) -> list[PipelineStage]:
        return [s for s in self.stages if s.state is not None]

    def stages_above_cache(self) -> list[PipelineStage]:
        kinds = self.kinds
        return self.stages[: kinds.index("Cache")] if "Cache" in kinds else self.stages

    def drain_steps(self) -> int:
        """Elements the pipeline may hold ready when the profiler starts: steps that would not wait for it."""
        total = 0
        for stage in self.stages:
            if stage.kind == "Prefetch":
                total += AUTOTUNE_PREFETCH_DRAIN if (stage.buffer or 0) < 0 else int(stage.buffer or 0)
        if not self.stages or self.stages[0].kind != "Prefetch":
            total += 1  # TF 2.21 injects a final prefetch(AUTOTUNE) holding at least one element
        return min(total, MAX_DRAIN_STEPS)

    def drain_slack(self) -> int:
        """Extra steps to profile past the guessed drain: AUTOTUNE buffers may be larger than guessed."""
        autotuned = sum(1 for stage in self.stages if stage.kind == "Prefetch" and (stage.buffer or 0) < 0)
        if not self.stages or self.stages[0].kind != "Prefetch":
            autotuned += 1  # the injected final prefetch is AUTOTUNE too
        return min(autotuned * AUTOTUNE_DRAIN_SLACK, MAX_DRAIN_STEPS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stages": [dataclasses.asdict(s) for s in self.stages],
            "cardinality": self.cardinality,
            "epoch_steps": self.epoch_steps,
            "generator": self.generator,
            "cached": self.cached,
            "prefetched": self.prefetched,
            "drain_steps": self.drain_steps(),
            "drain_slack": self.drain_slack(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PipelineShape:
        return cls(
            stages=[PipelineStage(**s) for s in data.get("stages", [])],
            cardinality=data.get("cardinality"),
            epoch_steps=data.get("epoch_steps"),
            generator=bool(data.get("generator")),
        )


def _int(value: Any) -> int | None:
    try:
        return int(value.numpy()) if hasattr(value, "numpy") else int(value)
    except Exception:  # a symbolic tensor or an attribute of another type: unknown
        return None


def _is_from_generator(dataset: Any) -> bool:
    """from_generator is a flat_map (over a repeated dummy element) whose function runs the generator."""
    function = getattr(getattr(dataset, "_map_func", None), "_func", None)
    return "_from_generator" in str(getattr(function, "__qualname__", ""))


def _stage(dataset: Any) -> PipelineStage:
    name = type(dataset).__name__
    kind = _NAMES.get(name, name.strip("_").removesuffix("Dataset") or name)
    if kind == "FlatMap" and _is_from_generator(dataset):
        return PipelineStage(kind="Generator")
    stage = PipelineStage(kind=kind)
    if kind.startswith("Parallel"):
        stage.parallel = _int(getattr(dataset, "_num_parallel_calls", None))
    if kind in ("Map", "ParallelMap"):
        stage.state = _map_state(dataset)
    if kind == "Prefetch":
        stage.buffer = _int(getattr(dataset, "_buffer_size", None))
    if kind in ("Batch", "ParallelBatch", "PaddedBatch"):
        stage.batch = _int(getattr(dataset, "_batch_size", None))
    if kind in ("Repeat", "Take"):
        stage.count = _int(getattr(dataset, "_count", None))
    return stage


def _map_state(dataset: Any) -> str | None:
    """ "random", "stateful" or None for a map stage, from the op types in its traced function (nested ones too)."""
    try:
        graph = _tf_private.map_function_graph(dataset)
        operations = [(op.type, _tf_private.op_is_stateful(op)) for op in graph.get_operations()]
        nested = [node.op for function in graph.as_graph_def().library.function for node in function.node_def]
    except Exception:  # private attributes changed: unknown, treated as deterministic (no advice is withheld)
        return None
    types = [kind for kind, _ in operations] + nested
    stateful = any(is_stateful for _, is_stateful in operations) or any(kind in _STATEFUL_NESTED for kind in nested)
    if any("Random" in kind or kind.startswith("Rng") for kind, is_stateful in operations if is_stateful):
        return "random"
    # Stateless random ops with a seed read from a variable (Keras' SeedGenerator) differ on every call.
    if stateful and any("Random" in kind for kind in types):
        return "random"
    return "stateful" if stateful else None


# Stateful op types that may hide in a nested function's body (where _is_stateful cannot be asked).
_STATEFUL_NESTED = frozenset(
    {"EagerPyFunc", "PyFunc", "ReadVariableOp", "AssignVariableOp", "RandomUniform", "RandomStandardNormal"}
)


def _inputs(dataset: Any) -> list[Any]:
    try:
        return _tf_private.dataset_inputs(dataset)
    except Exception:  # not a tf.data DatasetV2 (a distributed dataset, a Keras adapter): stop here
        return []


def _cardinality(dataset: Any) -> int | None:
    try:
        value = int(dataset.cardinality().numpy())
    except Exception:
        return None
    return value if value >= 0 else None


def _epoch_steps(chain: list[Any], stages: list[PipelineStage]) -> int | None:
    """Output elements until a cache under the outermost repeat has been read through once."""
    kinds = [s.kind for s in stages]
    if "Cache" not in kinds:
        return None
    cache_at = kinds.index("Cache")
    repeats = [i for i, kind in enumerate(kinds[:cache_at]) if kind == "Repeat"]
    if not repeats:
        return _cardinality(chain[0])  # one pass over the iterator fills the cache
    repeat_at = repeats[-1]  # the repeat just above the cache
    elements = _cardinality(chain[repeat_at + 1])
    if elements is None:
        return None
    for stage in reversed(stages[:repeat_at]):
        if stage.kind in ("Batch", "ParallelBatch", "PaddedBatch") and stage.batch:
            elements = math.ceil(elements / stage.batch)
        elif stage.kind not in _ONE_TO_ONE and stage.kind != "Repeat":
            return None  # filter, unbatch, flat_map: the epoch's length in steps is unknown
    return elements


def describe_dataset(dataset: Any, *, max_depth: int = 64) -> PipelineShape:
    """Walk a tf.data Dataset from its output stage to its source."""
    chain: list[Any] = []
    node = dataset
    while node is not None and len(chain) < max_depth:
        chain.append(node)
        inputs = _inputs(node)
        node = inputs[0] if len(inputs) == 1 else None
    stages = [_stage(d) for d in chain]
    kinds = [s.kind for s in stages]
    if "Generator" in kinds:
        stages = stages[: kinds.index("Generator") + 1]  # below it: from_generator's own dummy source
    return PipelineShape(
        stages=stages,
        cardinality=_cardinality(dataset),
        epoch_steps=_epoch_steps(chain, stages),
        generator="Generator" in [s.kind for s in stages],
    )
