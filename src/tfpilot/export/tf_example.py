"""Raw feature arrays -> serialized tf.Example protos (what a :classify / :regress client sends)."""

from __future__ import annotations

import numpy as np

__all__ = ["to_examples"]


def _feature(value: np.ndarray):
    import tensorflow as tf

    flat = np.asarray(value).reshape(-1)
    if flat.dtype.kind in ("U", "S", "O"):
        return tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[v if isinstance(v, bytes) else str(v).encode() for v in flat])
        )
    if flat.dtype.kind in ("i", "u", "b"):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=flat.astype(np.int64).tolist()))
    return tf.train.Feature(float_list=tf.train.FloatList(value=flat.astype(np.float32).tolist()))


def to_examples(features: dict[str, np.ndarray]) -> list[bytes]:
    """One serialized tf.Example per row of the batched ``features`` (name -> [batch, ...])."""
    import tensorflow as tf

    count = len(next(iter(features.values())))
    return [
        tf.train.Example(
            features=tf.train.Features(feature={name: _feature(values[row]) for name, values in features.items()})
        ).SerializeToString()
        for row in range(count)
    ]
