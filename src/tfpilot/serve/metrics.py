"""A small Prometheus registry (text exposition format 0.0.4), extensible by other modules.

The server's own metrics are counters and histograms updated on each request; other modules
(drift monitoring, say) add gauges whose value is computed by a callback at scrape time:

    server.metrics.register_gauge(
        "tfpilot_drift_score", "Drift score per feature.",
        lambda: {("age",): 0.12, ("income",): 0.31}, labelnames=("feature",))
"""

from __future__ import annotations

import bisect
import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = [
    "MetricsRegistry",
    "ServerMetrics",
    "Counter",
    "Gauge",
    "Histogram",
    "CONTENT_TYPE",
    "LATENCY_BUCKETS",
    "BATCH_SIZE_BUCKETS",
    "TF_SERVING_LATENCY_BUCKETS",
    "DEFAULT_METRICS_PATH",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
# TF Serving's own buckets: microseconds, Exponential(10, 1.8, 33) (~20 minutes), and example
# counts Exponential(1, 2, 15); dashboards written for TF Serving read these exact edges.
TF_SERVING_LATENCY_BUCKETS = tuple(10 * 1.8**i for i in range(33))
TF_SERVING_EXAMPLE_BUCKETS = tuple(float(2**i) for i in range(15))
DEFAULT_METRICS_PATH = "/monitoring/prometheus/metrics"
# Our API names -> TF Serving's `API` label; only these count as requests in its metrics.
_TF_SERVING_API = {
    "predict": "Predict",
    "classify": "Classify",
    "regress": "Regress",
    "multi_inference": "MultiInference",
}

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_log = logging.getLogger("tfpilot.serve")

GaugeCallback = Callable[[], "float | Mapping[tuple[str, ...], float]"]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _format_labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    parts = [f'{name}="{_escape(str(value))}"' for name, value in zip(names, values, strict=False)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


class _Metric:
    kind = ""

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str]) -> None:
        if not _METRIC_NAME.fullmatch(name):
            raise ValueError(f"invalid Prometheus metric name `{name}`")
        for label in labelnames:
            if not _LABEL_NAME.fullmatch(label) or label == "le":
                raise ValueError(f"invalid Prometheus label name `{label}` for metric `{name}`")
        self.name = name
        self.help = help_text
        self.labelnames = tuple(labelnames)
        self._lock = threading.Lock()

    def key(self, **labels: str) -> tuple[str, ...]:
        """The series key for ``labels``, checked once; hot paths keep it and call ``*_key``."""
        return self._key(labels)

    def _key(self, labels: Mapping[str, str]) -> tuple[str, ...]:
        if set(labels) != set(self.labelnames):
            raise ValueError(f"metric `{self.name}` takes labels {self.labelnames}, got {tuple(labels)}")
        return tuple(str(labels[name]) for name in self.labelnames)

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {self.help.replace(chr(10), ' ')}", f"# TYPE {self.name} {self.kind}"]

    def samples(self) -> list[str]:
        return []


class Counter(_Metric):
    kind = "counter"

    def __init__(self, name: str, help_text: str, labelnames: Sequence[str] = ()) -> None:
        super().__init__(name, help_text, labelnames)
        self._values: dict[tuple[str, ...], float] = {}

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        self.inc_key(self._key(labels), amount)

    def inc_key(self, key: tuple[str, ...], amount: float = 1.0) -> None:
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        return self._values.get(self._key(labels), 0.0)

    def samples(self) -> list[str]:
        with self._lock:
            items = sorted(self._values.items())
        return [f"{self.name}{_format_labels(self.labelnames, key)} {_format_value(v)}" for key, v in items]


class Gauge(_Metric):
    kind = "gauge"

    def __init__(
        self, name: str, help_text: str, labelnames: Sequence[str] = (), callback: GaugeCallback | None = None
    ) -> None:
        super().__init__(name, help_text, labelnames)
        self._values: dict[tuple[str, ...], float] = {}
        self._callback = callback

    def set(self, value: float, **labels: str) -> None:
        key = self._key(labels)
        with self._lock:
            self._values[key] = float(value)

    def _current(self) -> list[tuple[tuple[str, ...], float]]:
        if self._callback is None:
            with self._lock:
                return sorted(self._values.items())
        result = self._callback()
        if isinstance(result, Mapping):
            items = []
            for key, value in result.items():
                key = (key,) if isinstance(key, str) else tuple(str(part) for part in key)
                if len(key) != len(self.labelnames):
                    raise ValueError(f"gauge `{self.name}` callback gave labels {key} for {self.labelnames}")
                items.append((key, float(value)))
            return sorted(items)
        if self.labelnames:
            raise ValueError(f"gauge `{self.name}` has labels {self.labelnames}; its callback must return a mapping")
        return [((), float(result))]

    def samples(self) -> list[str]:
        return [f"{self.name}{_format_labels(self.labelnames, key)} {_format_value(v)}" for key, v in self._current()]


class Histogram(_Metric):
    kind = "histogram"

    def __init__(
        self, name: str, help_text: str, labelnames: Sequence[str] = (), buckets: Iterable[float] = LATENCY_BUCKETS
    ) -> None:
        super().__init__(name, help_text, labelnames)
        self.buckets = tuple(sorted(float(b) for b in buckets))
        self._series: dict[tuple[str, ...], list[float]] = {}  # bucket counts..., sum, count

    def observe(self, value: float, **labels: str) -> None:
        self.observe_key(self._key(labels), value)

    def observe_key(self, key: tuple[str, ...], value: float) -> None:
        index = bisect.bisect_left(self.buckets, value)
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = [0.0] * (len(self.buckets) + 2)
            if index < len(self.buckets):
                series[index] += 1
            series[-2] += value
            series[-1] += 1

    def count(self, **labels: str) -> float:
        series = self._series.get(self._key(labels))
        return series[-1] if series else 0.0

    def samples(self) -> list[str]:
        lines = []
        with self._lock:
            items = sorted((key, list(series)) for key, series in self._series.items())
        for key, series in items:
            cumulative = 0.0
            for bound, count in zip(self.buckets, series, strict=False):
                cumulative += count
                le = f'le="{_format_value(bound)}"'
                lines.append(
                    f"{self.name}_bucket{_format_labels(self.labelnames, key, le)} {_format_value(cumulative)}"
                )
            infinity = _format_labels(self.labelnames, key, 'le="+Inf"')
            lines.append(f"{self.name}_bucket{infinity} {_format_value(series[-1])}")
            lines.append(f"{self.name}_sum{_format_labels(self.labelnames, key)} {_format_value(series[-2])}")
            lines.append(f"{self.name}_count{_format_labels(self.labelnames, key)} {_format_value(series[-1])}")
        return lines


class MetricsRegistry:
    """Named metrics rendered together; metric names are unique."""

    def __init__(self) -> None:
        self._metrics: dict[str, _Metric] = {}
        self._lock = threading.Lock()

    def _add(self, metric: _Metric) -> _Metric:
        with self._lock:
            if metric.name in self._metrics:
                raise ValueError(f"metric `{metric.name}` is already registered")
            self._metrics[metric.name] = metric
        return metric

    def counter(self, name: str, help_text: str, labelnames: Sequence[str] = ()) -> Counter:
        return self._add(Counter(name, help_text, labelnames))  # type: ignore[return-value]

    def gauge(self, name: str, help_text: str, labelnames: Sequence[str] = ()) -> Gauge:
        return self._add(Gauge(name, help_text, labelnames))  # type: ignore[return-value]

    def histogram(
        self, name: str, help_text: str, labelnames: Sequence[str] = (), buckets: Iterable[float] = LATENCY_BUCKETS
    ) -> Histogram:
        return self._add(Histogram(name, help_text, labelnames, buckets))  # type: ignore[return-value]

    def register_gauge(
        self, name: str, help_text: str, callback: GaugeCallback, *, labelnames: Sequence[str] = ()
    ) -> Gauge:
        """Add a gauge computed at scrape time: ``callback()`` returns a number, or (with
        ``labelnames``) a mapping from label-value tuples to numbers."""
        return self._add(Gauge(name, help_text, labelnames, callback=callback))  # type: ignore[return-value]

    def unregister(self, name: str) -> None:
        with self._lock:
            self._metrics.pop(name, None)

    def get(self, name: str) -> _Metric | None:
        return self._metrics.get(name)

    def render(self) -> str:
        with self._lock:
            metrics = list(self._metrics.values())
        lines: list[str] = []
        for metric in metrics:
            try:
                samples = metric.samples()
            except Exception as error:  # one broken callback must not break the whole scrape
                _log.warning("metrics: gauge %s failed: %s", metric.name, error)
                continue
            lines.extend(metric.header())
            lines.extend(samples)
        return "\n".join(lines) + "\n"


_Key = tuple[str, ...]
# requests, errors (None when OK), latency, TF Serving's count and latency (None for APIs it lacks)
_RequestKeys = tuple[_Key, _Key | None, _Key, _Key | None, _Key | None]


class ServerMetrics:
    """The model server's own metrics, registered on a (possibly shared) registry."""

    def __init__(self, registry: MetricsRegistry) -> None:
        self.registry = registry
        self._request_keys: dict[tuple[str, str, str, str], _RequestKeys] = {}
        self.requests = registry.counter(
            "tfpilot_serve_requests_total",
            "Requests answered, by model, API, protocol and status code.",
            ("model", "api", "protocol", "status"),
        )
        self.errors = registry.counter(
            "tfpilot_serve_request_errors_total",
            "Requests that failed, by model, API, protocol and status code.",
            ("model", "api", "protocol", "status"),
        )
        self.latency = registry.histogram(
            "tfpilot_serve_request_latency_seconds",
            "Request latency in seconds, from body read to response.",
            ("model", "api", "protocol"),
        )
        self.batch_size = registry.histogram(
            "tfpilot_serve_batch_size", "Rows per model call (1 without batching).", ("model",), BATCH_SIZE_BUCKETS
        )
        # TF Serving's metrics under its own names (its "/tensorflow/serving/x" become
        # ":tensorflow:serving:x" in its Prometheus exporter), labels and units.
        self.tfs_request_count = registry.counter(
            ":tensorflow:serving:request_count", "The total number of requests.", ("model_name", "status")
        )
        self.tfs_request_latency = registry.histogram(
            ":tensorflow:serving:request_latency",
            "Distribution of wall time (in microseconds) for Tensorflow Serving request.",
            ("model_name", "API", "entrypoint"),
            TF_SERVING_LATENCY_BUCKETS,
        )
        self.tfs_example_counts = registry.histogram(
            ":tensorflow:serving:request_example_counts",
            "The number of tensorflow.Examples per request.",
            ("model",),
            TF_SERVING_EXAMPLE_BUCKETS,
        )
        self.tfs_example_count_total = registry.counter(
            ":tensorflow:serving:request_example_count_total", "The total number of tensorflow.Examples.", ("model",)
        )
        self.tfs_load_attempts = registry.counter(
            ":tensorflow:cc:saved_model:load_attempt_count",
            "The number of times a SavedModel was successfully loaded.",
            ("model_path", "status"),
        )
        self.tfs_load_latency = registry.counter(
            ":tensorflow:cc:saved_model:load_latency",
            "Latency in microseconds for SavedModels that were successfully loaded.",
            ("model_path",),
        )

    def observe_request(self, *, model: str, api: str, protocol: str, status: str, seconds: float) -> None:
        cached = self._request_keys.get((model, api, protocol, status))
        if cached is None:
            # Checked once per label combination (a few dozen: configured model names, fixed
            # APIs, protocols and codes) instead of five label checks on every request.
            tfs_api = _TF_SERVING_API.get(api)
            cached = (
                self.requests.key(model=model, api=api, protocol=protocol, status=status),
                self.errors.key(model=model, api=api, protocol=protocol, status=status) if status != "OK" else None,
                self.latency.key(model=model, api=api, protocol=protocol),
                self.tfs_request_count.key(model_name=model, status=status) if tfs_api else None,
                self.tfs_request_latency.key(model_name=model, API=tfs_api, entrypoint=protocol.upper())
                if tfs_api
                else None,
            )
            self._request_keys[(model, api, protocol, status)] = cached
        requests, errors, latency, tfs_count, tfs_latency = cached
        self.requests.inc_key(requests)
        if errors is not None:
            self.errors.inc_key(errors)
        self.latency.observe_key(latency, seconds)
        if tfs_count is not None and tfs_latency is not None:
            self.tfs_request_count.inc_key(tfs_count)
            self.tfs_request_latency.observe_key(tfs_latency, seconds * 1e6)

    def observe_examples(self, model: str, count: int) -> None:
        self.tfs_example_counts.observe(count, model=model)
        self.tfs_example_count_total.inc(count, model=model)

    def observe_load(self, *, path: str, ok: bool, seconds: float) -> None:
        """One SavedModel load attempt (TF's loader counts successes as `success`)."""
        self.tfs_load_attempts.inc(model_path=path, status="success" if ok else "fail")
        if ok:
            self.tfs_load_latency.inc(seconds * 1e6, model_path=path)

    def observe_batch(self, model: str, size: int) -> None:
        self.batch_size.observe(size, model=model)
