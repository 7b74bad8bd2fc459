"""Rows of real training data to verify an exported model against the trained one.

Their outputs are compared after export (the exported model must answer as the trained one
does), so a row holding a non-finite value proves nothing: NaN never equals NaN, and a row the
NaN guard skipped would make every export of that run look unfaithful or "sampling".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

__all__ = ["finite_rows"]


def finite_rows(batches: list[Any], *, count: int) -> Any:
    """The first `count` rows, over the given batches, whose every numeric feature is finite.

    The saved rows verify the exported model against the trained one; a row holding the NaN the
    guard skipped would make every export look unfaithful (NaN never equals NaN)."""
    kept: list[Any] = []
    for batch in batches:
        leaves = [np.asarray(leaf) for leaf in tf.nest.flatten(batch)]
        if not leaves or not leaves[0].shape:
            continue
        good = np.ones(leaves[0].shape[0], dtype=bool)
        for leaf in leaves:
            if leaf.dtype.kind == "f" and leaf.shape[:1] == good.shape:
                good &= np.isfinite(leaf.reshape(leaf.shape[0], -1)).all(axis=1)
        if good.any():
            kept.append(tf.nest.map_structure(lambda value, mask=good: np.asarray(value)[mask], batch))
        if sum(tf.nest.flatten(part)[0].shape[0] for part in kept) >= count:
            break
    if not kept:
        return None
    joined = tf.nest.map_structure(lambda *parts: np.concatenate(parts, axis=0), *kept)
    return tf.nest.map_structure(lambda value: value[:count], joined)
