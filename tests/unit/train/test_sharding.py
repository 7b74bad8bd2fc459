"""Global batches split into per-replica slices: every replica steps the same number of times and
together they see exactly the examples one device sees."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.train.sharding import replica_slices, usable_batches


def _global_batches(num_examples: int, batch_size: int) -> tf.data.Dataset:
    features = {"x": np.arange(num_examples, dtype=np.float32)[:, None]}
    labels = np.arange(num_examples, dtype=np.int64)
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch_size)


@pytest.mark.parametrize(("pipelines", "num_replicas"), [(2, 2), (1, 2), (2, 4)])
def test_slices_cover_every_example_once_with_equal_step_counts(pipelines: int, num_replicas: int) -> None:
    num_examples, batch_size = 23, 8  # two full global batches and one of 7
    local = num_replicas // pipelines
    per_replica: dict[int, list[np.ndarray]] = {r: [] for r in range(num_replicas)}
    sizes = set()
    for pipeline_id in range(pipelines):
        context = tf.distribute.InputContext(
            num_input_pipelines=pipelines, input_pipeline_id=pipeline_id, num_replicas_in_sync=num_replicas
        )
        dataset = replica_slices(
            _global_batches(num_examples, batch_size),
            num_replicas=num_replicas,
            input_context=context,
            with_global_size=True,
        )
        for position, (features, labels, rows) in enumerate(dataset):
            # Elements come in replica order, one per local replica per step.
            replica = pipeline_id * local + position % local
            np.testing.assert_array_equal(features["x"].numpy()[:, 0].astype(np.int64), labels.numpy())
            per_replica[replica].append(labels.numpy())
            sizes.add((position // local, int(rows)))
    assert {len(batches) for batches in per_replica.values()} == {3}
    assert sizes == {(0, 8), (1, 8), (2, 7)}
    seen = np.sort(np.concatenate([np.concatenate(batches) for batches in per_replica.values()]))
    np.testing.assert_array_equal(seen, np.arange(num_examples))


def test_a_last_batch_smaller_than_the_replica_count_is_left_out_and_counted() -> None:
    assert usable_batches(24, batch_size=8, num_replicas=2) == (3, 0)
    assert usable_batches(23, batch_size=8, num_replicas=2) == (3, 0)
    assert usable_batches(17, batch_size=8, num_replicas=2) == (2, 1)
    assert usable_batches(17, batch_size=8, num_replicas=1) == (3, 0)
    assert usable_batches(1, batch_size=8, num_replicas=2) == (1, 0)
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=2)
    dataset = replica_slices(
        _global_batches(17, 8), num_replicas=2, input_context=context, with_global_size=False, min_rows=2
    )
    assert [int(labels.shape[0]) for _, labels in dataset] == [4, 4]
