"""Reference statistics of the training split, computed through the pipeline's raw features.

The raw features are exactly what a client sends to the server (``Pipeline.raw``), so the
reference and the logged traffic are compared in the same space. Every distribution is stored
with the bin edges it was counted on; drift checks bin the served values with the same
:func:`bin_counts`, so reference and current histograms can never disagree on binning.

Kinds (decided from the feature spec and the source kind):
  numeric      scalar number: count, missing, mean, std, min, max, quantiles, decile histogram
               and a value sample (for the Kolmogorov-Smirnov test)
  categorical  scalar string: frequencies of the most common values (the rest pooled)
  image        number tensor of rank >= 2: shape, per-channel mean/std and intensity histogram,
               and a sample of per-image mean intensity (one independent value per image)
  sequence     text or a rank-1 number tensor: length summary/histogram and top tokens
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.atomic import atomic_write_json

__all__ = [
    "FORMAT_VERSION",
    "OTHER",
    "compute_reference_stats",
    "feature_statistics",
    "write_reference_stats",
    "load_reference_stats",
    "bin_counts",
    "numeric_summary",
]

FORMAT_VERSION = 1
OTHER = "<other>"  # bucket for categorical values / tokens outside the stored vocabulary
SAMPLE_SIZE = 1000
NUMERIC_BINS = 10  # deciles: equal-mass bins are what PSI is defined on
IMAGE_BINS = 16
MAX_CATEGORIES = 1000
TOP_TOKENS = 200
_QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)


# ----------------------------------------------------------------------------- binning


def bin_counts(values: np.ndarray, edges: list[float]) -> np.ndarray:
    """Counts of ``values`` in the bins delimited by ``edges``; out-of-range values land in the
    first or last bin, so served values beyond the training range still count."""
    edges_array = np.asarray(edges, dtype=np.float64)
    num_bins = max(1, edges_array.size - 1)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    values = values[np.isfinite(values)]
    index = np.searchsorted(edges_array[1:-1], values, side="right")
    return np.bincount(index, minlength=num_bins)[:num_bins].astype(np.int64)


def _quantile_edges(values: np.ndarray, num_bins: int) -> list[float]:
    if values.size == 0:
        return [0.0, 1.0]
    edges = np.unique(np.quantile(values, np.linspace(0.0, 1.0, num_bins + 1)))
    if edges.size < 2:  # a constant feature: one bin
        edges = np.asarray([edges[0], edges[0]])
    return [float(e) for e in edges]


def _sample(values: np.ndarray, *, size: int = SAMPLE_SIZE, seed: int = 0) -> list[float]:
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size > size:
        values = np.random.default_rng(seed).choice(values, size=size, replace=False)
    return [float(v) for v in values]


def numeric_summary(values: np.ndarray) -> dict[str, Any]:
    """count/missing/mean/std/min/max/quantiles/histogram/sample of a 1-D numeric array."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = values[np.isfinite(values)]
    summary: dict[str, Any] = {"count": int(values.size), "missing": int(values.size - finite.size)}
    if finite.size == 0:
        summary.update(
            mean=0.0, std=0.0, min=0.0, max=0.0, quantiles={}, histogram={"edges": [0.0, 1.0], "counts": [0]}, sample=[]
        )
        return summary
    edges = _quantile_edges(finite, NUMERIC_BINS)
    summary.update(
        mean=float(finite.mean()),
        std=float(finite.std()),
        min=float(finite.min()),
        max=float(finite.max()),
        quantiles={f"p{int(round(q * 100)):02d}": float(np.quantile(finite, q)) for q in _QUANTILES},
        histogram={"edges": edges, "counts": bin_counts(finite, edges).tolist()},
        sample=_sample(finite),
    )
    return summary


def _frequencies(counter: Counter, *, limit: int, total: int) -> dict[str, Any]:
    top = counter.most_common(limit)
    kept = sum(count for _, count in top)
    frequencies = {str(value): count / total for value, count in top} if total else {}
    return {
        "num_unique": len(counter),
        "frequencies": frequencies,
        "counts": {str(value): int(count) for value, count in top},
        "other": (total - kept) / total if total else 0.0,
    }


# ----------------------------------------------------------------------------- per kind


def _as_text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def tokenize(text: str) -> list[str]:
    """Whitespace tokens, lower-cased: a model-independent view of text for drift checks."""
    return text.lower().split()


def feature_kind(*, dtype: str, shape: list[int | None], source_kind: str = "") -> str:
    """numeric | categorical | image | sequence, from a feature's per-example spec."""
    is_string = dtype == "string"
    if is_string:
        return "sequence" if source_kind == "text" else "categorical"
    if len(shape) == 0:
        return "numeric"
    if len(shape) == 1:
        return "sequence" if source_kind == "text" or shape[0] is None else "numeric_vector"
    return "image"


def image_statistics(images: np.ndarray, *, dtype: str) -> dict[str, Any]:
    images = np.asarray(images)
    if images.ndim == 3:  # [batch, height, width] -> one channel
        images = images[..., np.newaxis]
    channels = images.shape[-1]
    pixels = images.reshape(images.shape[0], -1, channels).astype(np.float64)
    if dtype == "uint8":
        edges = np.linspace(0.0, 256.0, IMAGE_BINS + 1)
    else:
        low, high = float(np.nanmin(pixels)), float(np.nanmax(pixels))
        edges = np.linspace(low, high if high > low else low + 1.0, IMAGE_BINS + 1)
    edge_list = [float(e) for e in edges]
    per_image_mean = pixels.mean(axis=1)  # [batch, channels]
    return {
        "shape": [int(d) for d in images.shape[1:]],
        "height": int(images.shape[1]),
        "width": int(images.shape[2]),
        "channels": int(channels),
        "count": int(images.shape[0]),
        "channel_mean": [float(v) for v in pixels.mean(axis=(0, 1))],
        "channel_std": [float(v) for v in pixels.std(axis=(0, 1))],
        "histogram": {
            "edges": edge_list,
            "counts": [bin_counts(pixels[:, :, c], edge_list).tolist() for c in range(channels)],
        },
        "image_mean": [numeric_summary(per_image_mean[:, c]) for c in range(channels)],
    }


def sequence_lengths_and_tokens(values: Any, *, is_string: bool) -> tuple[np.ndarray, list[list[str]]]:
    if is_string:
        token_lists = [tokenize(_as_text(v)) for v in np.asarray(values, dtype=object).reshape(-1)]
    else:
        token_lists = [[str(int(t)) for t in np.asarray(row).reshape(-1) if int(t) != 0] for row in values]
    return np.asarray([len(tokens) for tokens in token_lists], dtype=np.float64), token_lists


def feature_statistics(values: Any, *, kind: str, dtype: str) -> dict[str, Any]:
    """Statistics of one feature's training values (batch first)."""
    if kind == "numeric":
        return {"kind": kind, "dtype": dtype, **numeric_summary(np.asarray(values, dtype=np.float64))}
    if kind == "numeric_vector":
        # Fixed-length numeric vectors are summarised element-wise as one pooled distribution.
        return {"kind": "numeric", "dtype": dtype, **numeric_summary(np.asarray(values, dtype=np.float64).reshape(-1))}
    if kind == "categorical":
        texts = [_as_text(v) for v in np.asarray(values, dtype=object).reshape(-1)]
        missing = sum(1 for t in texts if t == "")
        stats = _frequencies(Counter(texts), limit=MAX_CATEGORIES, total=len(texts))
        return {"kind": kind, "dtype": dtype, "count": len(texts), "missing": missing, **stats}
    if kind == "image":
        return {"kind": kind, "dtype": dtype, **image_statistics(np.asarray(values), dtype=dtype)}
    if kind == "sequence":
        lengths, token_lists = sequence_lengths_and_tokens(values, is_string=dtype == "string")
        tokens = Counter(token for tokens in token_lists for token in tokens)
        total = sum(tokens.values())
        return {
            "kind": kind,
            "dtype": dtype,
            "count": int(lengths.size),
            "length": numeric_summary(lengths),
            "tokens": _frequencies(tokens, limit=TOP_TOKENS, total=total),
        }
    raise ValueError(f"unknown feature kind `{kind}`")


# ----------------------------------------------------------------------------- pipeline


def _collect(
    dataset: Any, names: list[str], *, max_examples: int | None
) -> tuple[dict[str, list[np.ndarray]], list[np.ndarray], int]:
    columns: dict[str, list[np.ndarray]] = {name: [] for name in names}
    labels: list[np.ndarray] = []
    seen = 0
    # Ragged features (variable-length sequences) cannot be stacked by batch(); use ragged_batch.
    batched = dataset.ragged_batch(512) if hasattr(dataset, "ragged_batch") else dataset.batch(512)
    for features, label in batched:
        for name in names:
            value = features[name]
            columns[name].append(value.to_list() if hasattr(value, "to_list") else value.numpy())
        label_batch = np.asarray(label)
        # Multilabel batches stay [batch, labels] (multi-hot); class ids are flattened to [batch].
        labels.append(label_batch if label_batch.ndim == 2 else label_batch.reshape(-1))
        seen += int(labels[-1].shape[0])
        if max_examples is not None and seen >= max_examples:
            break
    return columns, labels, seen


def _concatenate(parts: list[Any]) -> Any:
    if not parts:
        return np.zeros((0,))
    if isinstance(parts[0], list):
        return [row for part in parts for row in part]
    return np.concatenate(parts, axis=0)


def compute_reference_stats(
    pipeline: Any, *, split: str = "train", max_examples: int | None = 100_000
) -> dict[str, Any]:
    """Statistics of a split's raw features and labels, as stored in reference_stats.json."""
    spec = pipeline.feature_spec
    source_kind = getattr(getattr(pipeline, "source", None), "kind", "")
    names = list(spec)
    columns, labels, seen = _collect(pipeline.raw(split), names, max_examples=max_examples)
    features: dict[str, Any] = {}
    for name in names:
        tensor_spec = spec[name]
        dtype = tensor_spec.dtype.name
        shape = list(tensor_spec.shape.as_list())
        kind = feature_kind(dtype=dtype, shape=shape, source_kind=source_kind)
        values = _concatenate(columns[name])
        if max_examples is not None:
            values = values[:max_examples]
        features[name] = feature_statistics(values, kind=kind, dtype=dtype)
    label_array = np.concatenate(labels)[: max_examples or None] if labels else np.zeros((0,), np.int64)
    class_names = list(pipeline.class_names)
    if getattr(pipeline, "task", "classification") == "regression":
        # A standardised numeric target: one "class" (the target) counting every example.
        counts = np.asarray([label_array.shape[0]], np.int64)
    elif label_array.ndim == 2:
        # Multilabel: examples holding each label (a row may count for several).
        counts = label_array.astype(np.int64).sum(axis=0)
    else:
        counts = np.bincount(label_array.astype(np.int64), minlength=len(class_names))[: len(class_names)]
    total = int(counts.sum())
    return {
        "format_version": FORMAT_VERSION,
        "split": split,
        "num_examples": int(min(seen, max_examples or seen)),
        "features": features,
        "labels": {
            "class_names": class_names,
            "counts": [int(c) for c in counts],
            "frequencies": [float(c) / total if total else 0.0 for c in counts],
        },
    }


def write_reference_stats(stats: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    atomic_write_json(path, stats)
    return path


def load_reference_stats(path: str | Path) -> dict[str, Any]:
    """Read reference_stats.json from a file or from a run directory."""
    import json

    from tfpilot.errors import MonitorError
    from tfpilot.rundir import RunDir

    path = Path(path)
    if path.is_dir():
        path = RunDir.at(path).reference_stats_path
    if not path.is_file():
        raise MonitorError(
            f"no reference statistics at `{path}`; expected reference_stats.json written at training time "
            "(run `tfpilot monitor stats RUN` to compute them for an existing run)"
        )
    try:
        stats = json.loads(path.read_text())
    except ValueError as error:
        raise MonitorError(
            f"`{path}` is not valid JSON ({error}); recompute it with `tfpilot monitor stats RUN`"
        ) from None
    if not isinstance(stats, dict) or "features" not in stats:
        raise MonitorError(f"`{path}` holds no `features`; expected reference_stats.json from tfpilot")
    return stats
