"""Rows to verify an exported model against the trained one: real training rows, or generated
ones shaped as the model's Inputs where the batches are not its input (probe_rows).

Their outputs are compared after export (the exported model must answer as the trained one
does), so a row holding a non-finite value proves nothing: NaN never equals NaN, and a row the
NaN guard skipped would make every export of that run look unfaithful or "sampling".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

__all__ = ["finite_rows", "probe_rows"]


def finite_rows(batches: list[Any], *, count: int, chunk: int = 256) -> Any:
    """The first `count` rows, over the given batches, whose every numeric feature is finite.

    The saved rows verify the exported model against the trained one; a row holding the NaN the
    guard skipped would make every export look unfaithful (NaN never equals NaN). A batch is read
    `chunk` rows at a time: the arrays a user passes to fit are whole training sets, and checking
    (and copying) all of them for 8 rows cost ~0.3-1 s of every run."""
    kept: list[Any] = []
    found = 0
    for batch in batches:
        leaves = tf.nest.flatten(batch)
        if not leaves or not np.shape(leaves[0]):
            continue
        rows = np.shape(leaves[0])[0]
        for start in range(0, rows, chunk):
            part = tf.nest.map_structure(lambda value, s=start: np.asarray(value[s : s + chunk]), batch)
            flat = tf.nest.flatten(part)
            good = np.ones(flat[0].shape[0], dtype=bool)
            for leaf in flat:
                if leaf.dtype.kind == "f" and leaf.shape[:1] == good.shape:
                    good &= np.isfinite(leaf.reshape(leaf.shape[0], -1)).all(axis=1)
            if good.any():
                kept.append(tf.nest.map_structure(lambda value, mask=good: value[mask], part))
                found += int(good.sum())
            if found >= count:
                break
        if found >= count:
            break
    if not kept:
        return None
    joined = tf.nest.map_structure(lambda *parts: np.concatenate(parts, axis=0), *kept)
    return tf.nest.map_structure(lambda value: value[:count], joined)


def probe_rows(inputs: list[Any], *, count: int, seed: int = 0) -> Any:
    """`count` generated rows shaped and typed as the model's declared Inputs, or None.

    For a model whose own train_step reads the batches its own way (a stack of pairs, a dict it
    unpacks), the batches are not the model's input, so no training row can verify its export.
    These rows only compare the exported model with the trained one: a seeded standard normal for
    float inputs, zeros for integer ones; inputs of any other type (strings) or with an unknown
    dimension besides the batch give None."""
    rng = np.random.default_rng(seed)
    rows = []
    for tensor in inputs:
        shape = list(tensor.shape)[1:]
        if any(dimension is None for dimension in shape):
            return None
        dtype = tf.as_dtype(tensor.dtype)
        if dtype.is_floating:
            rows.append(tf.constant(rng.standard_normal([count, *shape]), dtype=dtype))
        elif dtype.is_integer:
            rows.append(tf.zeros([count, *shape], dtype=dtype))
        else:
            return None
    return rows[0] if len(rows) == 1 else rows
