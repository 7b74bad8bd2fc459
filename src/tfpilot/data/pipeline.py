"""The tf.data pipeline: split -> parallel decode -> preprocess -> cache -> shuffle -> batch -> prefetch.

Order matters and follows the tf.data performance guide: cache after the deterministic,
expensive work (file reads, decoding, preprocessing) and before the random work (shuffle,
augmentation), so every epoch after the first reads from memory and still sees a new order.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import tensorflow as tf

from tfpilot.config.schema import Batching, DataConfig
from tfpilot.data.preprocessing import Preprocessor, fit_preprocessor
from tfpilot.data.sources import Source, load_source
from tfpilot.errors import DataError
from tfpilot.findings import Finding

__all__ = ["Pipeline", "build_pipeline", "split_indices", "SPLITS"]

SPLITS = ("train", "validation", "test")
AUTOTUNE = tf.data.AUTOTUNE


def split_indices(
    num_examples: int, *, validation: float, test: float, seed: int, labels: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """A deterministic shuffled split: the same seed gives the same examples in each split.

    With ``labels`` (data.split.stratify) each class is split on its own, so every split holds
    each class in the same proportion (a rare class is not left out of validation by chance)."""
    if labels is not None:
        rng = np.random.default_rng(seed)
        parts: dict[str, list[np.ndarray]] = {"test": [], "validation": [], "train": []}
        for label in np.unique(labels):
            members = rng.permutation(np.flatnonzero(labels == label))
            num_test = int(round(members.size * test))
            num_validation = int(round(members.size * validation))
            parts["test"].append(members[:num_test])
            parts["validation"].append(members[num_test : num_test + num_validation])
            parts["train"].append(members[num_test + num_validation :])
        return {split: np.sort(np.concatenate(chunks)).astype(np.int64) for split, chunks in parts.items()}
    order = np.random.default_rng(seed).permutation(num_examples)
    num_test = int(round(num_examples * test))
    num_validation = int(round(num_examples * validation))
    return {
        "test": np.sort(order[:num_test]),
        "validation": np.sort(order[num_test : num_test + num_validation]),
        "train": np.sort(order[num_test + num_validation :]),
    }


@dataclasses.dataclass
class Pipeline:
    config: DataConfig
    source: Source
    preprocessor: Preprocessor
    indices: dict[str, np.ndarray]
    batch_size: int
    seed: int = 0
    _cached: dict[str, tf.data.Dataset] = dataclasses.field(default_factory=dict, repr=False)
    _audit: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    def with_empty_cache(self) -> Pipeline:
        """A copy whose built datasets are its own (a new memo, not the shared one): datasets
        built inside a graph traced for parameter-server workers must stay out of this one."""
        return dataclasses.replace(self, _cached={})

    def clear_cache(self) -> None:
        """Forget the built split datasets: the labels or the preprocessing changed (a task was
        inferred, a parameter-server worker rebuilds its own)."""
        self._cached.clear()

    # ------------------------------------------------------------------ facts
    @property
    def class_names(self) -> list[str]:
        return self.source.class_names

    @property
    def task(self) -> str:
        """`regression` once the labels are a standardised target (data/regression.py), else `classification`."""
        from tfpilot.data.regression import task_of

        return task_of(self.preprocessor)

    @property
    def num_classes(self) -> int:
        return len(self.source.class_names)

    @property
    def feature_spec(self) -> dict[str, tf.TensorSpec]:
        return self.source.feature_spec

    def audit(self) -> tuple[dict[str, Any], list[Finding]]:
        """The data report and its findings (computed once; see tfpilot.data.audit)."""
        if "audit" not in self._audit:
            from tfpilot.data.audit import audit_pipeline

            self._audit["audit"] = audit_pipeline(self)
        return self._audit["audit"]

    @property
    def findings(self) -> list[Finding]:
        """Everything the source and the audit found (skipped rows, empty classes, leaks...)."""
        return self.audit()[1]

    def num_examples(self, split: str) -> int:
        return int(self.indices[split].shape[0])

    def steps_per_epoch(self, *, batch_size: int | None = None) -> int:
        size = batch_size or self.batch_size
        return max(1, -(-self.num_examples("train") // size))

    @property
    def _parallel(self) -> int:
        return self.config.num_parallel_calls or AUTOTUNE

    def _options(self) -> tf.data.Options:
        options = tf.data.Options()
        options.deterministic = True
        options.autotune.enabled = True
        return options

    # ------------------------------------------------------------------ datasets
    def records(self, split: str) -> tf.data.Dataset:
        if split not in self.indices:
            raise DataError(f"unknown split `{split}`; expected one of {list(self.indices)}")
        index = self.indices[split]
        if index.size == 0:
            raise DataError(f"the `{split}` split is empty; lower data.split fractions or add data")
        if self.source.streamed is not None:
            return self._streamed_records(self.source.streamed.files[split])
        records = {name: values[index] for name, values in self.source.records.items()}
        return tf.data.Dataset.from_tensor_slices((records, self.source.labels[index]))

    @property
    def streams(self) -> bool:
        """Whether the records are read from TFRecord shards every epoch (data.tfrecord.stream)."""
        return self.source.streamed is not None

    def shards(self, split: str) -> list[str]:
        """The TFRecord shards a streamed split is read from ([] when the records are in memory)."""
        return [] if self.source.streamed is None else list(self.source.streamed.files[split])

    def _streamed_records(self, files: list[str]) -> tf.data.Dataset:
        from tfpilot.data.tfrecord_stream import read_records

        key = self.config.tfrecord.label_key
        label_spec = {key: tf.io.FixedLenFeature([], tf.int64)}
        streamed = self.source.streamed
        assert streamed is not None
        records = read_records(files, limits=streamed.limits).map(
            lambda r: ({"serialized": r}, tf.cast(tf.io.parse_single_example(r, label_spec)[key], tf.int32)),
            num_parallel_calls=self._parallel,
        )
        if streamed.skip_bad:
            # The scan named each record with a label outside the classes (DATA-SKIPPED-RECORDS).
            classes = streamed.num_classes
            records = records.filter(lambda r, y: (y >= 0) & (y < classes))
        return records

    def raw(self, split: str) -> tf.data.Dataset:
        """Unbatched (raw features, label): what a client would send to the server."""
        return self._decoded(self.records(split))

    def _decoded(self, records: tf.data.Dataset) -> tf.data.Dataset:
        decode = self.source.decode
        dataset = records.map(lambda r, y: (decode(r), y), num_parallel_calls=self._parallel)
        if self.source.streamed is not None and self.source.streamed.skip_bad:
            # The scan before training named these records (DATA-SKIPPED-RECORDS); only they fail here.
            dataset = dataset.ignore_errors()
        return dataset.with_options(self._options())

    def _preprocessed(self, split: str) -> tf.data.Dataset:
        if split not in self._cached:
            preprocess = self.preprocessor
            dataset = self.raw(split).map(lambda f, y: (preprocess(f), y), num_parallel_calls=self._parallel)
            cache = self.config.cache
            if cache == "memory":
                # Holding a streamed split in memory is what data.tfrecord.stream avoids.
                dataset = dataset if self.streams else dataset.cache()
            elif cache != "none":
                dataset = dataset.cache(f"{cache}_{split}")
            self._cached[split] = dataset
        return self._cached[split]

    def _batch(self, dataset: tf.data.Dataset, batch_size: int, *, drop_remainder: bool) -> tf.data.Dataset:
        if self.config.batching == Batching.BATCH:
            return dataset.batch(batch_size, drop_remainder=drop_remainder, num_parallel_calls=self._parallel)
        return self.variable_length_batch(dataset, batch_size, drop_remainder=drop_remainder)

    def variable_length_batch(
        self, dataset: tf.data.Dataset, batch_size: int, *, drop_remainder: bool
    ) -> tf.data.Dataset:
        """Padded or bucketed batching of variable-length features (padding value 0)."""
        if self.config.batching == Batching.PADDED:
            return dataset.padded_batch(batch_size, drop_remainder=drop_remainder)
        boundaries = list(self.config.text.bucket_boundaries)
        return dataset.bucket_by_sequence_length(
            # Dict features (text + numeric inputs) are bucketed by their token sequence.
            element_length_func=lambda x, y: tf.shape(x["tokens"] if isinstance(x, dict) else x)[0],
            bucket_boundaries=boundaries,
            bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
            drop_remainder=drop_remainder,
        )

    def train(
        self,
        *,
        epoch: int = 0,
        skip_batches: int = 0,
        input_context: tf.distribute.InputContext | None = None,
        drop_remainder: bool = False,
    ) -> tf.data.Dataset:
        """Training batches for one epoch. The shuffle seed is derived from the epoch, so a resumed
        run sees exactly the order an uninterrupted run would have seen."""
        batch_size = self.batch_size
        if input_context is not None:
            batch_size = input_context.get_per_replica_batch_size(self.batch_size)
        if self.streams:
            dataset = self._streamed_train(epoch=epoch, input_context=input_context)
        else:
            dataset = self._preprocessed("train")
            if input_context is not None and input_context.num_input_pipelines > 1:
                dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        if self.config.shuffle_buffer > 0:
            dataset = dataset.shuffle(
                self.config.shuffle_buffer, seed=self.seed * 100_003 + epoch, reshuffle_each_iteration=False
            )
        dataset = self._batch(dataset, batch_size, drop_remainder=drop_remainder)
        dataset = self._augment(dataset, epoch=epoch)
        if skip_batches:
            dataset = dataset.skip(skip_batches)
        return dataset.prefetch(AUTOTUNE)

    def _streamed_train(self, *, epoch: int, input_context: tf.distribute.InputContext | None) -> tf.data.Dataset:
        """The training shards in a new seeded order every epoch; with several input pipelines
        (multi-worker) each reads only its own shards: sharding by file, not by record."""
        files = sorted(self.shards("train"))
        if input_context is not None and input_context.num_input_pipelines > 1:
            workers = input_context.num_input_pipelines
            if len(files) < workers:
                raise DataError(
                    f"{len(files)} training shard(s) cannot give each of {workers} workers its own; "
                    f"write at least {workers} shards (`tfpilot data convert --shards N`)",
                    exit_code=2,
                )
            files = files[input_context.input_pipeline_id :: workers]
        order = np.random.default_rng(self.seed * 100_003 + epoch).permutation(len(files))
        files = [files[i] for i in order]
        preprocess = self.preprocessor
        return self._decoded(self._streamed_records(files)).map(
            lambda f, y: (preprocess(f), y), num_parallel_calls=self._parallel
        )

    def _augment(self, dataset: tf.data.Dataset, *, epoch: int) -> tf.data.Dataset:
        """Training batches only (see tfpilot.data.augment): after the cache, per batch, seeded by epoch."""
        augment = self.config.augment
        if not augment.enabled:
            return dataset
        if self.source.kind != "image":
            raise DataError(
                f"data.augment applies to images, but this source is `{self.source.kind}`; remove data.augment",
                exit_code=2,
            )
        from tfpilot.data.augment import augmentation_layers

        layers = augmentation_layers(
            augment, image_shape=tuple(self.preprocessor.output_shape()), seed=self.seed, epoch=epoch
        )
        if layers is None:
            return dataset
        # One batch at a time: the layers draw from stateful seed generators, and parallel calls take
        # their draws in whatever order the threads run, so a rerun (or a resume) got other
        # augmentations for the same batches. The prefetch after it still overlaps training.
        return dataset.map(lambda x, y: (layers(x, training=True), y), num_parallel_calls=1)

    def evaluation(self, split: str, *, batch_size: int | None = None) -> tf.data.Dataset:
        dataset = self._preprocessed(split)
        return self._batch(dataset, batch_size or self.batch_size, drop_remainder=False).prefetch(AUTOTUNE)

    def arrays(self, split: str) -> tuple[Any, np.ndarray]:
        """Preprocessed features and labels of a split as numpy (for parity checks and small evals).

        Variable-length sequences are padded with 0 to the longest in the split (padding is masked
        by the text model); dict features come back as a dict of arrays."""
        xs: list[Any] = []
        ys = []
        dataset = self._preprocessed(split)
        # Split order is kept (parity pairs these rows with the raw split): bucketing would reorder.
        if self.config.batching == Batching.BATCH:
            dataset = dataset.batch(512)
        else:
            dataset = dataset.padded_batch(512)
        for x, y in dataset:
            xs.append({k: v.numpy() for k, v in x.items()} if isinstance(x, dict) else x.numpy())
            ys.append(y.numpy())
        if xs and isinstance(xs[0], dict):
            return {k: _concatenate_padded([x[k] for x in xs]) for k in xs[0]}, np.concatenate(ys)
        return _concatenate_padded(xs), np.concatenate(ys)


def _concatenate_padded(parts: list[np.ndarray]) -> np.ndarray:
    if len({p.shape[1:] for p in parts}) <= 1:
        return np.concatenate(parts)
    width = [max(p.shape[axis] for p in parts) for axis in range(1, parts[0].ndim)]
    padded = [np.pad(p, [(0, 0)] + [(0, w - d) for w, d in zip(width, p.shape[1:], strict=False)]) for p in parts]
    return np.concatenate(padded)


def build_pipeline(
    config: DataConfig, *, batch_size: int, seed: int = 0, preprocessor: Preprocessor | None = None, **arrays: Any
) -> Pipeline:
    """Load the source, split it by seed, fit preprocessing on the training split (unless given)."""
    source = load_source(config, **arrays)
    if len(source) < 3:
        raise DataError(
            f"found {len(source)} example(s) under `{config.path}`; need enough to split into train/validation/test"
        )
    indices = split_indices(
        len(source),
        validation=config.split.validation,
        test=config.split.test,
        seed=config.split.seed,
        labels=source.labels if config.split.stratify else None,
    )
    if source.streamed is not None:
        # Streamed shards are split whole (data/tfrecord_stream.py); labels are in split order.
        counts, start, indices = source.streamed.counts, 0, {}
        for split in SPLITS:
            indices[split] = np.arange(start, start + counts[split], dtype=np.int64)
            start += counts[split]
    if indices["train"].size == 0:
        raise DataError("the training split is empty; lower data.split.validation/test or add data")
    if preprocessor is None:
        if source.kind == "text":
            from tfpilot.data.text import fit_text_preprocessor

            preprocessor = fit_text_preprocessor(source, indices["train"], config)
        else:
            preprocessor = fit_preprocessor(
                source, indices["train"], impute=config.csv.impute.value, impute_value=config.csv.impute_value
            )
    if source.kind == "image":
        # The image_bytes serving signature resizes served files the way the pipeline resized training files.
        preprocessor.extra.setdefault("resize", config.image.resize)
    return Pipeline(
        config=config, source=source, preprocessor=preprocessor, indices=indices, batch_size=batch_size, seed=seed
    )
