"""Global batches split into per-replica slices, so every replica steps the same number of times.

Sharding examples per worker (`dataset.shard`) and batching per replica gives each worker its own
number of batches as soon as the data is not a multiple of the global batch: one worker runs out
first and the others wait in a collective it never joins. Instead every input pipeline reads the
same deterministic sequence of global batches (the one a single device would see) and keeps only
its replicas' rows of each. Every replica therefore runs exactly `ceil(examples / global_batch)`
steps per epoch on exactly the examples one device would see; only the last, short global batch
is split unevenly, and its true size travels with each slice so the loss is the global mean.

Reading the whole split on every worker costs input bandwidth that per-file sharding would save;
tfpilot's sources are in-memory arrays, so correctness wins here.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["replica_slices", "usable_batches", "slice_bounds"]


def slice_bounds(size: tf.Tensor, *, num_replicas: int, replica_ids: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Start and length of each replica's rows in a global batch of `size` rows (as even as possible)."""
    size = tf.cast(size, tf.int32)
    base, extra = size // num_replicas, size % num_replicas
    starts = replica_ids * base + tf.minimum(replica_ids, extra)
    lengths = base + tf.cast(replica_ids < extra, tf.int32)
    return starts, lengths


def _batch_size(structure: Any) -> tf.Tensor:
    return tf.shape(tf.nest.flatten(structure)[0])[0]


def replica_slices(
    global_batches: tf.data.Dataset,
    *,
    num_replicas: int,
    input_context: tf.distribute.InputContext | None,
    with_global_size: bool,
    min_rows: int = 0,
) -> tf.data.Dataset:
    """This input pipeline's per-replica elements, in replica order (what MultiDeviceIterator expects).

    `min_rows`: global batches with fewer rows are dropped (a replica would get an empty slice,
    which batch normalisation turns into NaN); `usable_batches` tells the caller how many remain.
    Elements are `(features, labels)` or, with `with_global_size`, `(features, labels, rows)` where
    `rows` is the global batch's size.
    """
    pipelines = input_context.num_input_pipelines if input_context is not None else 1
    pipeline_id = input_context.input_pipeline_id if input_context is not None else 0
    local = num_replicas // pipelines
    replica_ids = tf.range(pipeline_id * local, (pipeline_id + 1) * local, dtype=tf.int32)
    if min_rows:
        global_batches = global_batches.filter(lambda features, labels: _batch_size(labels) >= min_rows)

    def split(features, labels):
        size = _batch_size(labels)
        starts, lengths = slice_bounds(size, num_replicas=num_replicas, replica_ids=replica_ids)

        def take(index):
            start, length = starts[index], lengths[index]

            def cut(tensor):
                return tensor[start : start + length]

            sliced = (tf.nest.map_structure(cut, features), tf.nest.map_structure(cut, labels))
            return (*sliced, tf.cast(size, tf.int64)) if with_global_size else sliced

        # A handful of tensor slices per global batch: a parallel map would cost more than it saves.
        return tf.data.Dataset.range(local).map(lambda i: take(tf.cast(i, tf.int32)))  # tfpilot: noqa[TFP301]

    return global_batches.flat_map(split)


def usable_batches(num_examples: int, *, batch_size: int, num_replicas: int) -> tuple[int, int]:
    """(global batches per epoch, examples left out): a last batch smaller than the replica count
    is left out, because some replica would get no rows."""
    full, remainder = divmod(num_examples, batch_size)
    if remainder == 0:
        return full, 0
    if remainder >= num_replicas or full == 0:
        # full == 0: fewer examples than replicas in the whole split; keep them (some slices empty).
        return full + 1, 0
    return full, remainder
