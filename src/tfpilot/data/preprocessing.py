"""Preprocessing from raw serving features to the float tensor the core model consumes.

It runs in two places with the same code: inside the tf.data pipeline (parallel, cached) and
inside the exported serving signature, so training and serving can never disagree. Its state
(normalisation statistics, vocabularies) is plain JSON in the run directory: nothing is pickled.
Only constant tensors and TF ops are used, so it traces into any graph (tf.data, SavedModel).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from tfpilot.atomic import atomic_write_json
from tfpilot.data.names import signature_keys

__all__ = ["Preprocessor", "fit_preprocessor"]

# One-hot vocabularies are compared by broadcasting, which is right for categorical columns
# (tens of values) but not for text; text uses its own lookup layer.
MAX_CATEGORICAL_VOCABULARY = 1000


@dataclasses.dataclass
class Preprocessor:
    kind: str  # image | tabular | text
    feature_spec: dict[str, dict[str, Any]]  # name -> {"shape": [...], "dtype": "uint8"}
    numeric_columns: list[str] = dataclasses.field(default_factory=list)
    mean: list[float] = dataclasses.field(default_factory=list)
    std: list[float] = dataclasses.field(default_factory=list)
    vocabularies: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    # ------------------------------------------------------------------ serialisation
    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | Path) -> None:
        atomic_write_json(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Preprocessor:
        return cls(**json.loads(Path(path).read_text()))

    # ------------------------------------------------------------------ specs
    def input_signature(self, *, batched: bool = True) -> dict[str, tf.TensorSpec]:
        lead = [None] if batched else []
        # The TensorSpec name is the signature key, sanitised (see tfpilot.data.names); the dict keeps the feature name.
        keys = signature_keys(list(self.feature_spec))
        return {
            name: tf.TensorSpec([*lead, *spec["shape"]], tf.as_dtype(spec["dtype"]), name=keys[name])
            for name, spec in self.feature_spec.items()
        }

    def numeric_width(self, column: str) -> int:
        """Values one example holds in a numeric feature: 1 for a CSV column, k for an array feature of shape [k]."""
        return int(np.prod(self.feature_spec[column]["shape"], dtype=np.int64))

    @property
    def output_dim(self) -> int:
        if self.kind == "tabular":
            numeric = sum(self.numeric_width(c) for c in self.numeric_columns)
            return numeric + sum(len(v) + 1 for v in self.vocabularies.values())
        raise ValueError("output_dim is defined for tabular data only")

    def output_shape(self) -> Any:
        """Per-example model input shape; text gives (None,) or (max_length,), or a dict of shapes
        ({"tokens": ..., "numeric": (k,)}) when the text comes with numeric inputs."""
        if self.kind == "image":
            return tuple(self.feature_spec["image"]["shape"])
        if self.kind == "tabular":
            return (self.output_dim,)
        if self.kind == "text":
            from tfpilot.data.text import text_output_shape

            return text_output_shape(self)
        return tuple(self.extra.get("output_shape", ()))

    @property
    def vocab_size(self) -> int | None:
        """Text: number of token ids (vocabulary + padding + OOV); None for other kinds."""
        return len(self.extra.get("vocabulary", [])) + 2 if self.kind == "text" else None

    @property
    def trackable(self) -> Any:
        """TF resources (lookup tables) the transform uses; export must track them. None when there are none.

        Created once, eagerly, and shared by tf.data and the serving signature."""
        if self.kind != "text":
            return None
        lookup = self.__dict__.get("_text_lookup")
        if lookup is None:
            from tfpilot.data.text import TextLookup

            lookup = TextLookup(list(self.extra.get("vocabulary", [])))
            self.__dict__["_text_lookup"] = lookup
        return lookup

    # ------------------------------------------------------------------ transform
    def __call__(self, features: dict[str, tf.Tensor]) -> Any:
        """Raw features (batched or not) -> model input: float32 (image, tabular), int32 token ids
        (text), or a dict of both (text with numeric inputs)."""
        if self.kind == "image":
            # Pixel scaling lives here rather than in the model so TFLite int8 sees [0,1] floats.
            return tf.cast(features["image"], tf.float32) / 255.0
        if self.kind == "tabular":
            parts: list[tf.Tensor] = []
            if self.numeric_columns:
                numeric = tf.concat([self.flat_numeric(features[c], c) for c in self.numeric_columns], axis=-1)
                if "fill" in self.extra:
                    # data.csv.impute median/constant: missing cells take that value before scaling.
                    numeric = tf.where(tf.math.is_nan(numeric), tf.constant(self.extra["fill"], tf.float32), numeric)
                # Any remaining missing value (NaN) becomes the training mean, i.e. 0 after scaling.
                scaled = (numeric - tf.constant(self.mean, tf.float32)) / tf.constant(self.std, tf.float32)
                parts.append(tf.where(tf.math.is_nan(scaled), tf.zeros_like(scaled), scaled))
            for column, vocabulary in self.vocabularies.items():
                value = tf.convert_to_tensor(features[column])
                matches = tf.cast(tf.equal(value[..., None], tf.constant(vocabulary, tf.string)), tf.float32)
                # The last slot is out-of-vocabulary: values never seen in training still get a vector.
                oov = 1.0 - tf.reduce_max(matches, axis=-1, keepdims=True)
                parts.append(tf.concat([matches, oov], axis=-1))
            return tf.concat(parts, axis=-1)
        if self.kind == "text":
            from tfpilot.data.text import text_transform

            return text_transform(self, features)
        raise ValueError(f"no built-in transform for preprocessing kind `{self.kind}`")

    def flat_numeric(self, value: tf.Tensor, column: str) -> tf.Tensor:
        # [batch..., *shape] -> [batch..., width]: a scalar CSV column and an array feature of
        # shape [k] (the Python API's bare `x`) both become columns of the model input.
        value = tf.cast(value, tf.float32)
        example_rank = len(self.feature_spec[column]["shape"])
        leading = tf.shape(value)[: tf.rank(value) - example_rank]
        return tf.reshape(value, tf.concat([leading, [self.numeric_width(column)]], axis=0))


def fit_preprocessor(
    source: Any, train_indices: np.ndarray, *, impute: str = "mean", impute_value: float = 0.0
) -> Preprocessor:
    """Compute statistics on the training split only (never validation/test: that would leak).

    impute: how missing numeric values are filled (mean, median or constant ``impute_value``);
    the fill is part of the transform, so serving fills a missing value exactly as training did."""
    spec = {
        name: {"shape": [int(d) for d in s.shape], "dtype": s.dtype.name} for name, s in source.feature_spec.items()
    }
    if source.kind == "image":
        return Preprocessor(kind="image", feature_spec=spec)
    if source.kind == "tabular":
        mean: list[float] = []
        std: list[float] = []
        fill: list[float] = []
        for column in source.numeric_columns:
            # One statistic per value an example holds (an array feature of shape [k] has k).
            values = np.asarray(source.records[column], np.float64)[train_indices].reshape(len(train_indices), -1)
            for series in values.T:
                m = float(np.nanmean(series)) if np.isfinite(series).any() else 0.0
                s = float(np.nanstd(series)) if np.isfinite(series).any() else 1.0
                mean.append(m)
                fill.append(float(np.nanmedian(series)) if np.isfinite(series).any() else 0.0)
                std.append(s if s > 1e-12 else 1.0)
        vocabularies = {}
        for column in source.categorical_columns:
            values, counts = np.unique(source.records[column][train_indices], return_counts=True)
            order = np.argsort(-counts, kind="stable")[:MAX_CATEGORICAL_VOCABULARY]
            vocabularies[column] = [str(values[i]) for i in order]
        return Preprocessor(
            kind="tabular",
            feature_spec=spec,
            numeric_columns=list(source.numeric_columns),
            mean=mean,
            std=std,
            vocabularies=vocabularies,
            extra={"fill": fill if impute == "median" else [float(impute_value)] * len(fill)}
            if impute in ("median", "constant")
            else {},
        )
    raise ValueError(f"no built-in preprocessing for source kind `{source.kind}`")
