"""The rows a fit run keeps to verify its export: finite ones, read a chunk at a time."""

from __future__ import annotations

import numpy as np

from tfpilot.train.fit.sample_rows import finite_rows


def test_rows_with_a_non_finite_value_are_passed_over_across_chunks() -> None:
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    x[:6, 1] = np.nan  # the first chunk (chunk=4) has no finite row, the second has two
    rows = finite_rows([(x,)], count=3, chunk=4)
    assert rows is not None
    np.testing.assert_array_equal(rows[0], x[6:9])


def test_a_dict_of_features_keeps_its_keys_and_aligned_rows() -> None:
    features = {"a": np.array([1.0, np.inf, 3.0, 4.0]), "b": np.array([b"w", b"x", b"y", b"z"])}
    rows = finite_rows([features], count=2, chunk=256)
    assert rows is not None
    np.testing.assert_array_equal(rows["a"], [1.0, 3.0])
    assert list(rows["b"]) == [b"w", b"y"]


class _RecordingRows:
    """An array-like that records the rows read from it: a whole-array check would read them all."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.shape = array.shape
        self.read_up_to = 0

    def __getitem__(self, index: slice) -> np.ndarray:
        self.read_up_to = max(self.read_up_to, index.stop or 0)
        return self.array[index]


def test_only_the_rows_needed_are_read_from_a_large_array() -> None:
    x = _RecordingRows(np.zeros((100_000, 8), dtype=np.float32))
    rows = finite_rows([(x,)], count=8, chunk=256)
    assert rows is not None and rows[0].shape == (8, 8)
    assert x.read_up_to == 256  # one chunk, not the 100,000 rows


def test_nothing_finite_gives_none() -> None:
    assert finite_rows([(np.full((5, 2), np.nan),)], count=2) is None
