"""Drift of served traffic against the training reference: per feature and on predictions.

Scores (each reported for every feature where it applies):
  js            Jensen-Shannon divergence, base 2, in [0, 1] (numeric, categorical, image, sequence)
  psi           population stability index, sum (c - r) ln(c / r) on the reference's bins
  ks_statistic, ks_pvalue
                two-sample Kolmogorov-Smirnov (scipy.stats.ks_2samp) against the stored reference
                sample (numeric values, per-image mean intensity, sequence lengths)
  linf          largest absolute difference of category frequencies (categorical, predictions)

A feature drifts when any score crosses its threshold (``monitor`` section of the config). The
KS p-value threshold is Bonferroni-corrected over the features tested, so a table with many
columns does not raise a false alarm on one of them by chance. Fewer than ``min_examples``
served examples give no verdict at all: small windows make every divergence look large.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import math
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.errors import MonitorError
from tfpilot.findings import Finding, Severity
from tfpilot.monitor.statistics import OTHER, bin_counts, load_reference_stats, sequence_lengths_and_tokens

__all__ = [
    "DriftThresholds",
    "FeatureDrift",
    "DriftReport",
    "CurrentData",
    "MIN_EXAMPLES",
    "PREDICTION",
    "js_divergence",
    "population_stability_index",
    "linf_distance",
    "ks_test",
    "current_from_requests",
    "compute_drift",
    "detect_drift",
    "drift_findings",
    "DriftWindow",
]

MIN_EXAMPLES = 30
PREDICTION = "prediction"  # the pseudo-feature name of the predicted class distribution
_EPSILON = 1e-4  # floor for empty bins: PSI and KL are infinite on an empty bin otherwise


@dataclasses.dataclass(frozen=True)
class DriftThresholds:
    js: float = 0.1
    psi: float = 0.2
    ks_pvalue: float = 0.01
    linf: float = 0.2
    min_examples: int = MIN_EXAMPLES

    @classmethod
    def from_config(cls, monitor: Any, *, min_examples: int = MIN_EXAMPLES) -> DriftThresholds:
        """From a MonitorConfig (the `monitor` section of a run's config)."""
        return cls(
            js=monitor.js_threshold,
            psi=monitor.psi_threshold,
            ks_pvalue=monitor.ks_pvalue,
            linf=monitor.linf_threshold,
            min_examples=min_examples,
        )


# ----------------------------------------------------------------------------- scores


def _normalise(counts: Iterable[float]) -> np.ndarray:
    array = np.asarray(list(counts), dtype=np.float64)
    total = array.sum()
    return array / total if total > 0 else np.full(array.shape, 1.0 / max(1, array.size))


def js_divergence(reference: Iterable[float], current: Iterable[float]) -> float:
    """Jensen-Shannon divergence (base 2, so 0 = identical and 1 = disjoint) of two histograms."""
    p, q = _normalise(reference), _normalise(current)
    m = 0.5 * (p + q)

    def kl(a: np.ndarray, b: np.ndarray) -> float:
        mask = a > 0
        return float(np.sum(a[mask] * np.log2(a[mask] / b[mask])))

    return float(min(1.0, max(0.0, 0.5 * kl(p, m) + 0.5 * kl(q, m))))


def population_stability_index(reference: Iterable[float], current: Iterable[float]) -> float:
    """PSI = sum (c - r) ln(c / r), bins floored at 1e-4 (0.1 small, 0.2+ significant shift)."""
    p = np.maximum(_normalise(reference), _EPSILON)
    q = np.maximum(_normalise(current), _EPSILON)
    return float(np.sum((q - p) * np.log(q / p)))


def linf_distance(reference: Iterable[float], current: Iterable[float]) -> float:
    """Largest absolute difference of frequencies (TFDV's categorical drift comparator)."""
    p, q = _normalise(reference), _normalise(current)
    return float(np.max(np.abs(p - q))) if p.size else 0.0


def ks_test(reference_sample: Iterable[float], current: Iterable[float]) -> tuple[float, float]:
    """(statistic, p-value) of scipy's two-sample Kolmogorov-Smirnov test."""
    from scipy.stats import ks_2samp

    a = np.asarray(list(reference_sample), dtype=np.float64)
    b = np.asarray(list(current), dtype=np.float64).reshape(-1)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return 0.0, 1.0
    result = ks_2samp(a, b)
    return float(result.statistic), float(result.pvalue)


# ----------------------------------------------------------------------------- results


@dataclasses.dataclass
class FeatureDrift:
    feature: str
    kind: str
    scores: dict[str, float]
    drifted: bool
    reasons: list[str]
    num_examples: int
    # Both distributions on the reference's bins, for the report's charts.
    bins: list[str] = dataclasses.field(default_factory=list)
    reference: list[float] = dataclasses.field(default_factory=list)
    current: list[float] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class DriftReport:
    num_examples: int
    num_requests: int
    features: list[FeatureDrift]
    prediction: FeatureDrift | None
    thresholds: DriftThresholds
    enough_data: bool
    created_at: float = dataclasses.field(default_factory=time.time)

    @property
    def drifted(self) -> bool:
        return self.enough_data and (
            any(f.drifted for f in self.features) or bool(self.prediction and self.prediction.drifted)
        )

    def drifted_features(self) -> list[str]:
        names = [f.feature for f in self.features if f.drifted]
        if self.prediction is not None and self.prediction.drifted:
            names.append(PREDICTION)
        return names if self.enough_data else []

    def scores(self) -> dict[str, dict[str, float]]:
        """feature -> score name -> value (prediction drift under ``prediction``)."""
        table = {f.feature: dict(f.scores) for f in self.features}
        if self.prediction is not None:
            table[PREDICTION] = dict(self.prediction.scores)
        return table

    def to_dict(self) -> dict[str, Any]:
        return {
            "drifted": self.drifted,
            "drifted_features": self.drifted_features(),
            "enough_data": self.enough_data,
            "num_examples": self.num_examples,
            "num_requests": self.num_requests,
            "thresholds": dataclasses.asdict(self.thresholds),
            "features": [f.to_dict() for f in self.features],
            "prediction": self.prediction.to_dict() if self.prediction else None,
            "created_at": self.created_at,
        }


# ----------------------------------------------------------------------------- served data


@dataclasses.dataclass
class CurrentData:
    """Served feature values (batch first) and predicted class ids, as drift checks consume them."""

    features: dict[str, list[Any]]
    predictions: list[int]
    num_examples: int
    num_requests: int


def _decode_string(value: Any) -> str:
    # The request log stores bytes as base64 text; values that are not base64 are kept as-is.
    if not isinstance(value, str):
        return str(value)
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return value


def _rows(value: Any) -> list[Any]:
    """A logged input (batch first) as a list of per-example values; a scalar is one example."""
    if isinstance(value, list):
        return value
    return [value]


def _unwrap_example_value(value: Any) -> Any:
    # tf.Example columns arrive as one list of values per example; a scalar feature has one.
    if isinstance(value, list) and len(value) == 1 and not isinstance(value[0], list):
        return value[0]
    return value


def _prediction_ids(outputs: Mapping[str, Any], class_names: list[str]) -> list[int]:
    if "class_id" in outputs:
        return [int(np.asarray(v).reshape(-1)[0]) for v in _rows(outputs["class_id"])]
    if "probabilities" in outputs:
        return [int(np.argmax(np.asarray(v, dtype=np.float64))) for v in _rows(outputs["probabilities"])]
    if "class_name" in outputs:
        index = {name: i for i, name in enumerate(class_names)}
        names = [_decode_string(_unwrap_example_value(v)) for v in _rows(outputs["class_name"])]
        return [index[n] for n in names if n in index]
    return []


def current_from_requests(
    requests: Iterable[Any], reference_stats: Mapping[str, Any], *, window: int | None = None
) -> CurrentData:
    """Collect the reference's features (and predictions) from logged requests, newest ``window``
    examples if given. Requests lacking the features (another signature's inputs) are skipped."""
    names = list(reference_stats["features"])
    class_names = list(reference_stats.get("labels", {}).get("class_names", []))
    features: dict[str, list[Any]] = {name: [] for name in names}
    predictions: list[int] = []
    num_requests = 0
    for request in requests:
        inputs = request.inputs
        if not all(name in inputs for name in names):
            continue
        columns = {name: _rows(inputs[name]) for name in names}
        lengths = {len(rows) for rows in columns.values()}
        if len(lengths) != 1:
            continue  # inconsistent batch sizes: not a request the model could have served
        num_requests += 1
        for name, rows in columns.items():
            features[name].extend(_unwrap_example_value(row) for row in rows)
        ids = _prediction_ids(request.outputs, class_names)
        if len(ids) == next(iter(lengths)):
            predictions.extend(ids)
    num_examples = len(features[names[0]]) if names else 0
    if window is not None and num_examples > window:
        features = {name: values[-window:] for name, values in features.items()}
        predictions = predictions[-window:]
        num_examples = window
    return CurrentData(features=features, predictions=predictions, num_examples=num_examples, num_requests=num_requests)


# ----------------------------------------------------------------------------- per kind


def _bin_labels(edges: list[float]) -> list[str]:
    return [f"{edges[i]:.4g}–{edges[i + 1]:.4g}" for i in range(len(edges) - 1)]


def _histogram_scores(reference_counts: list[int], current_counts: np.ndarray) -> dict[str, float]:
    return {
        "js": js_divergence(reference_counts, current_counts),
        "psi": population_stability_index(reference_counts, current_counts),
    }


def _numeric_drift(name: str, stats: Mapping[str, Any], values: np.ndarray, *, kind: str) -> FeatureDrift:
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    edges = stats["histogram"]["edges"]
    current = bin_counts(values, edges)
    scores = _histogram_scores(stats["histogram"]["counts"], current)
    scores["ks_statistic"], scores["ks_pvalue"] = ks_test(stats.get("sample", []), values)
    scores["mean"] = float(np.nanmean(values)) if values.size else math.nan
    scores["reference_mean"] = float(stats.get("mean", math.nan))
    return FeatureDrift(
        name,
        kind,
        scores,
        False,
        [],
        int(values.size),
        _bin_labels(edges),
        _normalise(stats["histogram"]["counts"]).tolist(),
        _normalise(current).tolist(),
    )


def _categorical_scores(
    reference_frequencies: Mapping[str, float], other: float, values: list[str]
) -> tuple[dict[str, float], list[str], list[float], list[float]]:
    categories = list(reference_frequencies)
    known = set(categories)
    counts = Counter(value if value in known else OTHER for value in values)
    reference = [reference_frequencies[c] for c in categories] + [other]
    current = [counts.get(c, 0) for c in categories] + [counts.get(OTHER, 0)]
    scores = {
        "js": js_divergence(reference, current),
        "psi": population_stability_index(reference, current),
        "linf": linf_distance(reference, current),
        "unseen_fraction": counts.get(OTHER, 0) / len(values) if values else 0.0,
    }
    return scores, [*categories, OTHER], _normalise(reference).tolist(), _normalise(current).tolist()


def _categorical_drift(name: str, stats: Mapping[str, Any], values: list[Any]) -> FeatureDrift:
    texts = [_decode_string(v) for v in values]
    scores, bins, reference, current = _categorical_scores(stats["frequencies"], stats.get("other", 0.0), texts)
    return FeatureDrift(name, "categorical", scores, False, [], len(texts), bins, reference, current)


def _image_drift(name: str, stats: Mapping[str, Any], values: list[Any]) -> FeatureDrift:
    images = np.asarray(values, dtype=np.float64)
    expected = list(stats["shape"])
    if images.ndim == len(expected):  # [batch, h, w] for a one-channel reference
        images = images[..., np.newaxis]
    if list(images.shape[1:]) != expected:
        raise MonitorError(
            f"served `{name}` has shape {list(images.shape[1:])} per example, the reference {expected}; "
            "compare traffic with the reference of the model that serves it"
        )
    channels = expected[-1]
    pixels = images.reshape(images.shape[0], -1, channels)
    edges = stats["histogram"]["edges"]
    per_channel = [bin_counts(pixels[:, :, c], edges) for c in range(channels)]
    reference_counts = stats["histogram"]["counts"]
    js = [js_divergence(reference_counts[c], per_channel[c]) for c in range(channels)]
    psi = [population_stability_index(reference_counts[c], per_channel[c]) for c in range(channels)]
    ks = [ks_test(stats["image_mean"][c].get("sample", []), pixels[:, :, c].mean(axis=1)) for c in range(channels)]
    worst = int(np.argmax(js))
    scores = {
        "js": max(js),
        "psi": max(psi),
        "ks_statistic": max(k[0] for k in ks),
        "ks_pvalue": min(k[1] for k in ks),
        "mean": float(pixels.mean()),
        "reference_mean": float(np.mean(stats["channel_mean"])),
    }
    return FeatureDrift(
        name,
        "image",
        scores,
        False,
        [],
        int(images.shape[0]),
        _bin_labels(edges),
        _normalise(reference_counts[worst]).tolist(),
        _normalise(per_channel[worst]).tolist(),
    )


def _sequence_drift(name: str, stats: Mapping[str, Any], values: list[Any]) -> FeatureDrift:
    is_string = stats.get("dtype") == "string"
    if is_string:
        values = [_decode_string(v) for v in values]
    lengths, token_lists = sequence_lengths_and_tokens(values, is_string=is_string)
    length = _numeric_drift(name, stats["length"], lengths, kind="sequence")
    tokens = [token for tokens in token_lists for token in tokens]
    token_scores, _, _, _ = _categorical_scores(
        stats["tokens"]["frequencies"], stats["tokens"].get("other", 0.0), tokens
    )
    scores = {
        "js": max(length.scores["js"], token_scores["js"]),
        "psi": max(length.scores["psi"], token_scores["psi"]),
        "ks_statistic": length.scores["ks_statistic"],
        "ks_pvalue": length.scores["ks_pvalue"],
        "linf": token_scores["linf"],
        "length_js": length.scores["js"],
        "token_js": token_scores["js"],
        "unseen_token_fraction": token_scores["unseen_fraction"],
    }
    return FeatureDrift(name, "sequence", scores, False, [], len(values), length.bins, length.reference, length.current)


def _feature_drift(name: str, stats: Mapping[str, Any], values: list[Any]) -> FeatureDrift:
    kind = stats["kind"]
    if kind == "numeric":
        return _numeric_drift(name, stats, np.asarray(values, dtype=np.float64), kind="numeric")
    if kind == "categorical":
        return _categorical_drift(name, stats, values)
    if kind == "image":
        return _image_drift(name, stats, values)
    if kind == "sequence":
        return _sequence_drift(name, stats, values)
    raise MonitorError(f"reference feature `{name}` has unknown kind `{kind}`; recompute reference_stats.json")


def _prediction_drift(labels: Mapping[str, Any], predictions: list[int]) -> FeatureDrift:
    class_names = list(labels["class_names"])
    counts = np.bincount(np.asarray(predictions, dtype=np.int64), minlength=len(class_names))[: len(class_names)]
    reference = list(labels["frequencies"])
    scores = {
        "js": js_divergence(reference, counts),
        "psi": population_stability_index(reference, counts),
        "linf": linf_distance(reference, counts),
    }
    return FeatureDrift(
        PREDICTION,
        "prediction",
        scores,
        False,
        [],
        len(predictions),
        class_names,
        _normalise(reference).tolist(),
        _normalise(counts).tolist(),
    )


def _judge(drift: FeatureDrift, thresholds: DriftThresholds, *, ks_alpha: float) -> None:
    scores = drift.scores
    reasons = []
    if scores.get("js", 0.0) > thresholds.js:
        reasons.append(f"js {scores['js']:.3f} > {thresholds.js}")
    if scores.get("psi", 0.0) > thresholds.psi:
        reasons.append(f"psi {scores['psi']:.3f} > {thresholds.psi}")
    if "ks_pvalue" in scores and scores["ks_pvalue"] < ks_alpha:
        reasons.append(f"ks p-value {scores['ks_pvalue']:.2e} < {ks_alpha:.3g}")
    if "linf" in scores and scores["linf"] > thresholds.linf:
        reasons.append(f"linf {scores['linf']:.3f} > {thresholds.linf}")
    drift.reasons = reasons
    drift.drifted = bool(reasons)


def compute_drift(
    reference_stats: Mapping[str, Any], current: CurrentData, *, thresholds: DriftThresholds | None = None
) -> DriftReport:
    """Score every reference feature and the prediction distribution on ``current``."""
    thresholds = thresholds or DriftThresholds()
    enough = current.num_examples >= thresholds.min_examples
    features: list[FeatureDrift] = []
    if current.num_examples:
        for name, stats in reference_stats["features"].items():
            features.append(_feature_drift(name, stats, current.features[name]))
    prediction = None
    labels = reference_stats.get("labels")
    if labels and labels.get("class_names") and current.predictions:
        prediction = _prediction_drift(labels, current.predictions)
    tested = sum(1 for f in features if "ks_pvalue" in f.scores)
    ks_alpha = thresholds.ks_pvalue / max(1, tested)  # Bonferroni over the features tested
    for drift in [*features, *([prediction] if prediction else [])]:
        _judge(drift, thresholds, ks_alpha=ks_alpha)
    return DriftReport(current.num_examples, current.num_requests, features, prediction, thresholds, enough)


def detect_drift(
    reference: Mapping[str, Any] | str | Path,
    request_log: str | Path,
    *,
    model: str | None = None,
    window: int | None = None,
    thresholds: DriftThresholds | None = None,
) -> DriftReport:
    """Drift of the newest ``window`` examples in a request log against reference statistics."""
    from tfpilot.errors import ServeError
    from tfpilot.serve.request_log import read_requests

    stats = reference if isinstance(reference, Mapping) else load_reference_stats(reference)
    # Each request holds at least one example, so the newest `window` requests always suffice.
    try:
        requests = read_requests(request_log, model=model, limit=window)
    except ServeError as error:
        raise MonitorError(str(error)) from None
    current = current_from_requests(requests, stats, window=window)
    if current.num_requests == 0 and requests:
        raise MonitorError(
            f"none of the {len(requests)} logged request(s) carries the reference features {list(stats['features'])}; "
            "check --model and that the reference run is the model being served"
        )
    return compute_drift(stats, current, thresholds=thresholds)


def drift_findings(report: DriftReport, *, location: str = "") -> list[Finding]:
    """One finding per drifted feature (and for prediction drift), or one saying the window is too small."""
    if not report.enough_data:
        return [
            Finding(
                code="MON-DRIFT-FEW-EXAMPLES",
                severity=Severity.INFO,
                title="Too few served examples to judge drift",
                message=f"the window holds {report.num_examples} example(s); drift is judged from {report.thresholds.min_examples}",
                location=location,
                evidence={"num_examples": report.num_examples, "min_examples": report.thresholds.min_examples},
                fix="send more traffic or widen --window",
            )
        ]
    findings = []
    for drift in report.features:
        if drift.drifted:
            findings.append(
                Finding(
                    code="MON-DRIFT-FEATURE",
                    severity=Severity.WARNING,
                    title=f"Feature `{drift.feature}` drifted from the training data",
                    message=f"{drift.kind} feature `{drift.feature}` over {drift.num_examples} served examples: "
                    + "; ".join(drift.reasons),
                    location=location,
                    evidence={
                        k: round(v, 6) for k, v in drift.scores.items() if isinstance(v, float) and math.isfinite(v)
                    },
                    fix="check the client's preprocessing and the data source; if the shift is real, retrain on recent data, "
                    "validate with `tfpilot validate` and `tfpilot push` the new model",
                )
            )
    if report.prediction is not None and report.prediction.drifted:
        findings.append(
            Finding(
                code="MON-DRIFT-PREDICTION",
                severity=Severity.WARNING,
                title="Predicted class distribution drifted from the training labels",
                message=f"over {report.prediction.num_examples} predictions: " + "; ".join(report.prediction.reasons),
                location=location,
                evidence={k: round(v, 6) for k, v in report.prediction.scores.items()},
                fix="compare the served predictions with recent labels; a shifted class mix or a drifted input both show here",
            )
        )
    return findings


# ----------------------------------------------------------------------------- serve side


class DriftWindow:
    """Drift over the newest ``window`` logged examples, recomputed at most every ``min_interval_s``.

    Built for a metrics endpoint: each scrape calls :meth:`scores` (or the gauge callbacks from
    :meth:`register`), and a burst of scrapes costs one read of the request log.
    """

    def __init__(
        self,
        reference_stats: Mapping[str, Any] | str | Path,
        request_log_path: str | Path,
        *,
        window: int = 1000,
        model: str | None = None,
        thresholds: DriftThresholds | None = None,
        min_interval_s: float = 5.0,
    ) -> None:
        if window < 1:
            raise MonitorError(f"the drift window must hold at least 1 example, got {window}")
        self.reference_stats = (
            dict(reference_stats) if isinstance(reference_stats, Mapping) else load_reference_stats(reference_stats)
        )
        self.request_log_path = Path(request_log_path)
        self.window = window
        self.model = model
        self.thresholds = thresholds or DriftThresholds()
        self.min_interval_s = min_interval_s
        self._lock = threading.Lock()
        self._report: DriftReport | None = None
        self._computed_at = -math.inf

    def report(self, *, refresh: bool = False) -> DriftReport | None:
        """The current report, or None while the request log does not exist yet."""
        with self._lock:
            now = time.monotonic()
            if refresh or self._report is None or now - self._computed_at >= self.min_interval_s:
                if not self.request_log_path.exists():
                    return None
                self._report = detect_drift(
                    self.reference_stats,
                    self.request_log_path,
                    model=self.model,
                    window=self.window,
                    thresholds=self.thresholds,
                )
                self._computed_at = now
            return self._report

    def scores(self, *, refresh: bool = False) -> dict[str, dict[str, float]]:
        """feature -> {js, psi, ks_statistic, ks_pvalue, linf, ...}; empty until traffic is logged."""
        report = self.report(refresh=refresh)
        return report.scores() if report is not None else {}

    def _score_samples(self) -> dict[tuple[str, ...], float]:
        return {
            (feature, name): value
            for feature, table in self.scores().items()
            for name, value in table.items()
            if name in ("js", "psi", "ks_statistic", "ks_pvalue", "linf") and math.isfinite(value)
        }

    def _drifted_samples(self) -> dict[tuple[str, ...], float]:
        report = self.report()
        if report is None:
            return {}
        drifted = set(report.drifted_features())
        return {(feature,): float(feature in drifted) for feature in report.scores()}

    def _examples(self) -> float:
        report = self.report()
        return float(report.num_examples) if report is not None else 0.0

    def register(self, registry: Any, *, prefix: str = "tfpilot_drift") -> None:
        """Add scrape-time gauges to a serve MetricsRegistry (``register_gauge``)."""
        registry.register_gauge(
            f"{prefix}_score",
            "Drift score of served traffic vs the training data, per feature and score.",
            self._score_samples,
            labelnames=("feature", "score"),
        )
        registry.register_gauge(
            f"{prefix}_detected",
            "1 when the feature drifted beyond the configured thresholds.",
            self._drifted_samples,
            labelnames=("feature",),
        )
        registry.register_gauge(f"{prefix}_window_examples", "Served examples in the drift window.", self._examples)
