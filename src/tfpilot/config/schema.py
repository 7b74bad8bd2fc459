"""The typed run configuration. Each field is documented once, here; the JSON Schema and the
README's config reference are generated from these descriptions."""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "RunConfig",
    "DataConfig",
    "DataKind",
    "ImageOptions",
    "CsvOptions",
    "Impute",
    "BadRecords",
    "TextOptions",
    "TfrecordOptions",
    "AugmentConfig",
    "Task",
    "TfrecordFeature",
    "SplitConfig",
    "Batching",
    "ModelConfig",
    "TrainConfig",
    "OptimizerConfig",
    "ScheduleKind",
    "EarlyStoppingConfig",
    "Strategy",
    "NanPolicy",
    "JitCompile",
    "ExportConfig",
    "ParityThresholds",
    "ServeConfig",
    "MonitorConfig",
    "GateThreshold",
]


class _Section(BaseModel):
    # Unknown keys are errors: a typo such as `epoch:` must not silently train with defaults.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_enum_values=False)


# ---------------------------------------------------------------------------------------- data


class DataKind(str, enum.Enum):
    IMAGE_FOLDER = "image_folder"
    CSV = "csv"
    TEXT = "text"
    TFRECORD = "tfrecord"
    ARRAYS = "arrays"


class Batching(str, enum.Enum):
    BATCH = "batch"
    PADDED = "padded"
    BUCKETED = "bucketed"


class ImageOptions(_Section):
    height: Annotated[int, Field(gt=0, description="Height images are resized to (pixels).")] = 8
    width: Annotated[int, Field(gt=0, description="Width images are resized to (pixels).")] = 8
    channels: Annotated[int, Field(description="1 (grayscale) or 3 (RGB).")] = 1
    extensions: list[str] = Field(
        default_factory=lambda: [".png", ".jpg", ".jpeg"], description="File extensions read as images."
    )
    resize: str = Field(
        "stretch",
        description="Images of another size: stretch (ignore aspect ratio), pad (keep it, black borders) or crop "
        "(keep it, cut the centre).",
    )

    @field_validator("resize")
    @classmethod
    def _resize(cls, value: str) -> str:
        if value not in ("stretch", "pad", "crop"):
            raise ValueError(f"must be stretch, pad or crop, got `{value}`")
        return value

    @field_validator("channels")
    @classmethod
    def _channels(cls, value: int) -> int:
        if value not in (1, 3):
            raise ValueError(f"must be 1 or 3, got {value}")
        return value


class Impute(str, enum.Enum):
    MEAN = "mean"
    MEDIAN = "median"
    CONSTANT = "constant"
    ERROR = "error"


class BadRecords(str, enum.Enum):
    ERROR = "error"
    SKIP = "skip"


class CsvOptions(_Section):
    label_column: str = Field("label", description="Column holding the class label.")
    label_separator: str = Field(
        "|",
        min_length=1,
        description="Separator of several labels in one label cell (`cat|dog`): model.task multilabel, which "
        "`auto` picks when a label cell holds it.",
    )
    label_columns: list[str] | None = Field(
        None,
        description="Several 0/1 label columns, one per label, for model.task multilabel (instead of "
        "label_column); they are not inputs.",
    )
    numeric_columns: list[str] | None = Field(
        None, description="Numeric feature columns; default: every non-label column that parses as a number."
    )
    categorical_columns: list[str] = Field(
        default_factory=list,
        description="String-valued columns one-hot encoded with a vocabulary built from the training split.",
    )
    encoding: str = Field("utf-8", description="Text encoding of the CSV file (e.g. `latin-1`, `utf-8-sig`).")
    impute: Impute = Field(
        Impute.MEAN,
        description="Missing numeric cells (empty, NA, NaN, ?): mean or median of the training split, "
        "constant (`impute_value`), or error.",
    )
    impute_value: float = Field(0.0, description="Value that fills missing numeric cells when `impute: constant`.")


class TextOptions(_Section):
    text_column: str = Field("text", description="CSV column (or the whole line for .txt) holding the text.")
    label_column: str = Field("label", description="Column holding the class label.")
    vocab_size: Annotated[int, Field(gt=2, description="Vocabulary size, including padding and OOV tokens.")] = 5000
    max_length: Annotated[int, Field(gt=0, description="Sequences are truncated to this many tokens.")] = 64
    bucket_boundaries: list[int] = Field(
        default_factory=lambda: [8, 16, 32], description="Sequence-length bucket boundaries for `batching: bucketed`."
    )


class TfrecordFeature(_Section):
    dtype: str = Field(
        "float32",
        description="float32, int64, string, or image (encoded PNG/JPEG bytes decoded and resized per data.image).",
    )
    shape: list[int] = Field(default_factory=list, description="Per-example shape ([] for a scalar).")

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, value: str) -> str:
        if value not in ("float32", "int64", "string", "image"):
            raise ValueError(f"must be float32, int64, string or image, got `{value}`")
        return value


class TfrecordOptions(_Section):
    features: dict[str, TfrecordFeature] = Field(
        default_factory=dict,
        description="tf.Example feature name -> {dtype, shape}; `tfpilot data convert` prints the spec it wrote.",
    )
    pattern: str = Field(
        "*.tfrecord*", description="File glob of the shards inside data.path (when data.path is a folder)."
    )
    label_key: str = Field("label", description="int64 feature holding the class id.")
    class_names: list[str] | None = Field(None, description="Names of class ids 0..n-1; default: the ids as strings.")
    stream: bool = Field(
        False,
        description="Read the shards from disk every epoch instead of holding the records in memory (data larger "
        "than memory). Splits are whole shards, and multi-worker training gives each worker its own shards.",
    )
    splits: dict[str, str] = Field(
        default_factory=dict,
        description="With stream: split name (train, validation, test) -> file glob of its shards inside data.path; "
        "default: whole shards assigned by data.split fractions and seed.",
    )

    @field_validator("splits")
    @classmethod
    def _split_names(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - {"train", "validation", "test"})
        if unknown:
            raise ValueError(f"split names are train, validation and test, got {unknown}")
        if value and "train" not in value:
            raise ValueError("name the training shards too (`train: GLOB`)")
        return value

    @model_validator(mode="after")
    def _splits_need_stream(self) -> TfrecordOptions:
        if self.splits and not self.stream:
            raise ValueError(
                "splits by shard apply to streamed shards; set data.tfrecord.stream: true or remove splits"
            )
        return self


class AugmentConfig(_Section):
    flip: str = Field("none", description="Random flip: none, horizontal, vertical or horizontal_and_vertical.")
    rotation: Annotated[float, Field(ge=0, le=1, description="Random rotation, as a fraction of a full turn.")] = 0.0
    zoom: Annotated[float, Field(ge=0, lt=1, description="Random zoom in/out by up to this fraction.")] = 0.0
    translation: Annotated[
        float, Field(ge=0, lt=1, description="Random shift by up to this fraction of height and width.")
    ] = 0.0
    crop: Annotated[
        int, Field(ge=0, description="Pad by this many pixels and take a random crop back to the image size.")
    ] = 0
    contrast: Annotated[float, Field(ge=0, lt=1, description="Random contrast change by up to this factor.")] = 0.0
    brightness: Annotated[float, Field(ge=0, lt=1, description="Random brightness shift by up to this factor.")] = 0.0

    @field_validator("flip")
    @classmethod
    def _flip(cls, value: str) -> str:
        if value not in ("none", "horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError(f"must be none, horizontal, vertical or horizontal_and_vertical, got `{value}`")
        return value

    @property
    def enabled(self) -> bool:
        return self.flip != "none" or any(
            (self.rotation, self.zoom, self.translation, self.crop, self.contrast, self.brightness)
        )


class SplitConfig(_Section):
    validation: Annotated[float, Field(ge=0, lt=1, description="Fraction of examples held out for validation.")] = 0.15
    test: Annotated[float, Field(ge=0, lt=1, description="Fraction of examples held out for the test split.")] = 0.15
    seed: int = Field(0, description="Seed of the deterministic split.")
    stratify: bool = Field(False, description="Keep each class's share the same in every split (split class by class).")

    @model_validator(mode="after")
    def _fractions(self) -> SplitConfig:
        if self.validation + self.test >= 1:
            raise ValueError(
                f"validation + test must be < 1 so some data is left to train on, got {self.validation} + {self.test}"
            )
        return self


class DataConfig(_Section):
    kind: DataKind = Field(
        DataKind.IMAGE_FOLDER, description="Source type: image_folder, csv, text, tfrecord or arrays (Python API)."
    )
    path: Path | None = Field(
        None,
        description="Folder (image_folder; tfrecord shards), or file (csv, text, one tfrecord); relative to the config file.",
    )
    image: ImageOptions = Field(default_factory=ImageOptions)
    csv: CsvOptions = Field(default_factory=CsvOptions)
    text: TextOptions = Field(default_factory=TextOptions)
    tfrecord: TfrecordOptions = Field(default_factory=TfrecordOptions)
    augment: AugmentConfig = Field(
        default_factory=AugmentConfig,
        description="Image augmentation (Keras preprocessing layers) on training batches only; off by default.",
    )
    split: SplitConfig = Field(default_factory=SplitConfig)
    cache: str = Field("memory", description="`memory`, `none`, or a file path prefix for an on-disk cache.")
    shuffle_buffer: Annotated[int, Field(ge=0, description="Shuffle buffer size in examples (0 = no shuffle).")] = 10000
    batching: Batching = Field(
        Batching.BATCH, description="batch, padded (variable length) or bucketed (by sequence length)."
    )
    num_parallel_calls: int | None = Field(None, description="Parallel map calls; default AUTOTUNE.")
    on_bad_records: BadRecords = Field(
        BadRecords.ERROR,
        description="Bad records (CSV/text rows with non-numeric cells, no label or the wrong number of cells; "
        "files or TFRecord images that do not decode; TFRecords that do not parse or have a label outside the "
        "classes; damaged shards): `error` stops before training and names every problem at once (also in "
        "data_report.json); `skip` leaves them out and records a finding naming every one.",
    )

    @model_validator(mode="after")
    def _path_needed(self) -> DataConfig:
        if self.kind != DataKind.ARRAYS and self.path is None:
            raise ValueError(f"data.path is required when data.kind is `{self.kind.value}`")
        return self


# --------------------------------------------------------------------------------------- model


class Task(str, enum.Enum):
    """What the labels are: classes (softmax over them), two classes (one sigmoid), several labels
    per example (a sigmoid each) or a numeric target (regression). `auto` infers it from the label
    values: numbers with fractional parts or too many distinct values to be classes are a
    regression, cells holding data.csv.label_separator (or data.csv.label_columns) multilabel, two
    labels binary, otherwise multiclass."""

    AUTO = "auto"
    MULTICLASS = "multiclass"
    BINARY = "binary"
    MULTILABEL = "multilabel"
    REGRESSION = "regression"


class ModelConfig(_Section):
    task: Task = Field(
        Task.AUTO,
        description="`auto` (infer from the labels), `multiclass`, `binary` (exactly two classes, one sigmoid "
        "logit), `multilabel` (several labels per example, a sigmoid each) or `regression` (numeric target, "
        "standardised on the training split; served in original units).",
    )
    threshold: Annotated[
        float,
        Field(
            gt=0,
            lt=1,
            description="multilabel: a label is predicted when its probability is at least this (binary accuracy, "
            "the served `predicted` output).",
        ),
    ] = 0.5
    name: str = Field(
        "mlp",
        description="Built-in architecture (`mlp`, `cnn`, `text`) or a user factory `package.module:function` returning a keras.Model.",
    )
    hidden_units: list[Annotated[int, Field(gt=0)]] = Field(
        default_factory=lambda: [128, 64], description="Dense layer widths (mlp, and the head of cnn/text)."
    )
    filters: list[Annotated[int, Field(gt=0)]] = Field(
        default_factory=lambda: [32, 64], description="Conv2D filters per block (cnn)."
    )
    embedding_dim: Annotated[int, Field(gt=0, description="Embedding width (text).")] = 32
    dropout: Annotated[float, Field(ge=0, lt=1, description="Dropout rate between dense layers.")] = 0.1
    activation: str = Field("relu", description="Hidden activation.")
    kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Extra keyword arguments passed to a user factory."
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if ":" in value:
            module, _, attr = value.partition(":")
            if not re.fullmatch(r"[A-Za-z_][\w.]*", module) or not re.fullmatch(r"[A-Za-z_]\w*", attr):
                raise ValueError(f"a user model must look like `package.module:factory`, got `{value}`")
        elif value not in ("mlp", "cnn", "text"):
            raise ValueError(f"must be one of mlp, cnn, text or `package.module:factory`, got `{value}`")
        return value


# --------------------------------------------------------------------------------------- train


class ScheduleKind(str, enum.Enum):
    CONSTANT = "constant"
    COSINE = "cosine"
    EXPONENTIAL = "exponential"


class OptimizerConfig(_Section):
    name: str = Field("adam", description="Keras optimizer: adam, adamw, sgd, rmsprop.")
    learning_rate: Annotated[float, Field(gt=0, description="Initial learning rate.")] = 1e-3
    schedule: ScheduleKind = Field(
        ScheduleKind.CONSTANT, description="Learning-rate schedule: constant, cosine or exponential."
    )
    warmup_steps: Annotated[int, Field(ge=0, description="Linear warmup steps before the schedule.")] = 0
    decay_rate: Annotated[float, Field(gt=0, le=1, description="Decay rate per epoch (exponential).")] = 0.9
    momentum: Annotated[float, Field(ge=0, lt=1, description="Momentum (sgd).")] = 0.9
    weight_decay: Annotated[float, Field(ge=0, description="Decoupled weight decay (adamw).")] = 0.0

    @field_validator("name")
    @classmethod
    def _known(cls, value: str) -> str:
        if value.lower() not in ("adam", "adamw", "sgd", "rmsprop"):
            raise ValueError(f"must be one of adam, adamw, sgd, rmsprop, got `{value}`")
        return value.lower()


class EarlyStoppingConfig(_Section):
    monitor: str = Field(
        "val_loss",
        description="Logged metric watched (checked when the config loads): loss or a metric of the task or of "
        "train.metrics, `val_` prefixed for the validation split, e.g. val_loss, val_accuracy, val_auc, val_mae.",
    )
    mode: str = Field(
        "auto",
        description="auto (minimise losses and errors: *loss, mae, rmse, mse, mape; maximise the rest), min or max.",
    )
    patience: Annotated[int, Field(ge=1, description="Epochs without improvement before stopping.")] = 5
    min_delta: Annotated[float, Field(ge=0, description="Smallest change that counts as improvement.")] = 0.0
    restore_best: bool = Field(True, description="Restore the best weights when training stops.")

    @field_validator("mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        if value not in ("auto", "min", "max"):
            raise ValueError(f"must be auto, min or max, got `{value}`")
        return value


class Strategy(str, enum.Enum):
    AUTO = "auto"
    DEFAULT = "default"
    MIRRORED = "mirrored"
    MULTI_WORKER = "multi_worker"
    PARAMETER_SERVER = "parameter_server"


class NanPolicy(str, enum.Enum):
    STOP = "stop"
    SKIP_BATCH = "skip_batch"
    ROLLBACK = "rollback"


class JitCompile(str, enum.Enum):
    AUTO = "auto"
    TRUE = "true"
    FALSE = "false"
    # XLA looping over each call's stacked batches (one device; elsewhere the same as true).
    STACKED = "stacked"


class TrainConfig(_Section):
    epochs: Annotated[int, Field(gt=0, description="Maximum number of epochs.")] = 10
    batch_size: Annotated[int, Field(gt=0, description="Global batch size (split across replicas).")] = 64
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig)
    clip_norm: float | None = Field(1.0, description="Clip gradients to this global norm; null disables clipping.")
    l2: Annotated[float, Field(ge=0, description="L2 penalty on kernel weights added to the loss.")] = 0.0
    label_smoothing: Annotated[float, Field(ge=0, lt=1, description="Label smoothing for the cross-entropy loss.")] = (
        0.0
    )
    loss: str | None = Field(
        None,
        description="Loss by Keras name or `package.module:function` (y_true, y_pred) -> per-example loss; default: "
        "the task's (softmax or sigmoid cross-entropy from logits, or MSE on the standardised target). Names: "
        "multiclass sparse_categorical_crossentropy, categorical_crossentropy, categorical_focal_crossentropy, "
        "categorical_hinge; binary/multilabel binary_crossentropy, binary_focal_crossentropy, hinge, squared_hinge; "
        "regression mse, mae, huber, log_cosh.",
    )
    metrics: list[str] = Field(
        default_factory=list,
        description="Metrics besides the task's own, by Keras name or `package.module:function` (a function "
        "(y_true, y_pred) -> per-example values, or a keras.metrics.Metric class); logged per epoch under that "
        "name (val_ prefixed for validation) in history, metrics.json and TensorBoard. Names: multiclass accuracy, "
        "top_k_accuracy, top_<k>_accuracy, auc, prc, precision, recall; binary accuracy, auc, prc, precision, "
        "recall; multilabel binary_accuracy, auc, prc, precision, recall; regression mae, rmse, mse, r2, mape.",
    )
    class_weight: str | dict[str, float] | None = Field(
        None,
        description="Weigh each class's examples in the training loss: `balanced` (n / (classes * count) on the "
        "training split) or {class name: weight} (unlisted classes weigh 1); multiclass and binary only.",
    )
    early_stopping: EarlyStoppingConfig | None = Field(
        default_factory=EarlyStoppingConfig, description="Early stopping; null disables it."
    )
    seed: int = Field(0, description="Seed for weights, shuffling and dropout.")
    deterministic: bool = Field(
        False, description="Enable op determinism so the same seed gives bit-identical weights."
    )
    checkpoint_every_steps: Annotated[
        int, Field(ge=0, description="Also checkpoint every N steps (0 = only each epoch).")
    ] = 0
    max_checkpoints: Annotated[int, Field(gt=0, description="Checkpoints kept by the CheckpointManager.")] = 3
    summary_every_steps: Annotated[
        int, Field(gt=0, description="Write step scalars (loss, learning rate, gradient norm) every N steps.")
    ] = 100
    histogram_every_epochs: Annotated[
        int, Field(ge=0, description="Write weight and gradient histograms every N epochs (0 = never).")
    ] = 1
    steps_per_epoch: int | None = Field(
        None, description="Cap steps per epoch (default: one pass over the training split)."
    )
    strategy: Strategy = Field(
        Strategy.AUTO, description="Distribution strategy: auto, default, mirrored, multi_worker, parameter_server."
    )
    steps_per_execution: Annotated[int, Field(gt=0)] | Literal["auto"] = Field(
        "auto",
        description="Training steps run inside one tf.function call; auto: the fewest that make the per-call cost "
        "at most 2% of the steps' time, measured on real batches (one device; 1 under other strategies).",
    )
    jit_compile: JitCompile = Field(
        JitCompile.AUTO,
        description="XLA over the whole step: auto (time whole steps without XLA, with XLA launched per step "
        "and with XLA looping over each call's stacked batches; keep the fastest; one device only), true (one XLA "
        "launch per step, as Keras), stacked (one XLA loop per call; fast for small dense models, slow for "
        "convolutions on CPU) or false.",
    )
    mixed_precision: bool = Field(False, description="Use the mixed_float16 policy (with loss scaling).")
    nan_policy: NanPolicy = Field(
        NanPolicy.STOP, description="On a non-finite loss or gradient: stop, skip_batch or rollback."
    )
    nan_max_retries: Annotated[
        int,
        Field(
            ge=0,
            description="Non-finite batches in a row skipped or rolled back before training stops (a batch that trains resets the count).",
        ),
    ] = 10
    overfit_patience: Annotated[
        int,
        Field(
            ge=1,
            description="Epochs of rising validation loss with falling training loss before an overfitting finding.",
        ),
    ] = 3
    profile_steps: str | None = Field(
        None, description="Profile a window of steps, e.g. `10:20` (see `tfpilot profile`)."
    )

    @field_validator("jit_compile", mode="before")
    @classmethod
    def _yaml_boolean(cls, value: Any) -> Any:
        # YAML reads `jit_compile: false` as a boolean; it means the same as the string "false".
        return str(value).lower() if isinstance(value, bool) else value

    @field_validator("class_weight", mode="before")
    @classmethod
    def _class_weight(cls, value: Any) -> Any:
        if isinstance(value, str) and value != "balanced":
            raise ValueError(f"must be `balanced` or a mapping {{class name: weight}}, got `{value}`")
        if isinstance(value, dict):
            # YAML reads `{0: 1.0, 1: 4.0}` with int keys; class names are strings.
            bad = {k: v for k, v in value.items() if not isinstance(v, int | float) or isinstance(v, bool) or v <= 0}
            if bad:
                raise ValueError(f"class weights must be positive numbers, got {bad}")
            return {str(k): float(v) for k, v in value.items()}
        return value

    @field_validator("profile_steps")
    @classmethod
    def _window(cls, value: str | None) -> str | None:
        if value is not None:
            match = re.fullmatch(r"(\d+):(\d+)", value)
            if not match or int(match[1]) >= int(match[2]):
                raise ValueError(f"must look like `START:STOP` with START < STOP, got `{value}`")
        return value


# -------------------------------------------------------------------------------------- export


class ParityThresholds(_Section):
    max_accuracy_drop: Annotated[
        float, Field(ge=0, description="Largest accuracy drop vs the SavedModel (fraction).")
    ] = 0.01
    min_argmax_agreement: Annotated[
        float, Field(ge=0, le=1, description="Smallest fraction of identical predicted classes.")
    ] = 0.99


class ExportConfig(_Section):
    enabled: bool = Field(True, description="Export after training in `tfpilot run`.")
    formats: list[str] = Field(
        default_factory=lambda: ["saved_model"],
        description="saved_model, tflite, tflite-dynamic, tflite-int8, tflite-fp16 (and tfjs where available).",
    )
    signatures: list[str] = Field(
        default_factory=lambda: ["serving_default", "classify", "logits"],
        description="Signatures written: serving_default, classify, regress, logits.",
    )
    representative_batches: Annotated[
        int, Field(gt=0, description="Batches of training data used to calibrate int8.")
    ] = 20
    warmup_requests: Annotated[
        int, Field(ge=0, le=1000, description="Warmup records written from validation data (0 = none).")
    ] = 10
    parity: ParityThresholds = Field(default_factory=ParityThresholds)

    @field_validator("formats")
    @classmethod
    def _formats(cls, value: list[str]) -> list[str]:
        known = {"saved_model", "tflite", "tflite-dynamic", "tflite-int8", "tflite-fp16", "tfjs"}
        unknown = [v for v in value if v not in known]
        if unknown:
            raise ValueError(f"unknown format(s) {unknown}; expected any of {sorted(known)}")
        return value


# --------------------------------------------------------------------------------- serve/monitor


class ServeConfig(_Section):
    request_log_sample_rate: Annotated[
        float, Field(ge=0, le=1, description="Fraction of requests logged for drift monitoring.")
    ] = 1.0
    request_log_max_rows: Annotated[
        int, Field(gt=0, description="Rows kept in the request log before the oldest rotate out.")
    ] = 100_000


class GateThreshold(_Section):
    metric: str = Field(description="Metric name, e.g. accuracy or loss.")
    op: str = Field(">=", description="Comparison: >=, >, <=, <.")
    value: float = Field(description="Absolute bound, or bound on the change when `relative` is true.")
    relative: bool = Field(False, description="Compare the change vs the baseline instead of the absolute value.")


class MonitorConfig(_Section):
    js_threshold: Annotated[
        float, Field(gt=0, description="Jensen-Shannon divergence above which a feature drifts.")
    ] = 0.1
    psi_threshold: Annotated[
        float, Field(gt=0, description="Population stability index above which a feature drifts.")
    ] = 0.2
    ks_pvalue: Annotated[
        float, Field(gt=0, lt=1, description="Kolmogorov-Smirnov p-value below which a feature drifts.")
    ] = 0.01
    linf_threshold: Annotated[float, Field(gt=0, description="L-infinity distance for categorical drift.")] = 0.2
    gate: list[GateThreshold] = Field(
        default_factory=lambda: [GateThreshold(metric="accuracy", op=">=", value=0.9)],
        description="Validation thresholds a candidate must meet before `tfpilot push`.",
    )


# ----------------------------------------------------------------------------------------- run


class RunConfig(_Section):
    name: str = Field("run", description="Run name; the run directory is <runs_dir>/<name>.")
    runs_dir: Path = Field(Path("runs"), description="Parent of run directories; relative to the current directory.")
    data: DataConfig
    model: ModelConfig = Field(default_factory=ModelConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)
    serve: ServeConfig = Field(default_factory=ServeConfig)
    monitor: MonitorConfig = Field(default_factory=MonitorConfig)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", value):
            raise ValueError(f"must be letters, digits, `_`, `-` or `.`, got `{value}`")
        return value

    @property
    def run_path(self) -> Path:
        return self.runs_dir / self.name
