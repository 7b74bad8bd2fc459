"""Prometheus text exposition and extension gauges."""

from __future__ import annotations

import pytest

from tfpilot.serve.metrics import MetricsRegistry, ServerMetrics


def test_counters_histograms_and_gauges_render_in_text_format():
    registry = MetricsRegistry()
    metrics = ServerMetrics(registry)
    metrics.observe_request(model="half", api="predict", protocol="rest", status="OK", seconds=0.003)
    metrics.observe_request(model="half", api="predict", protocol="rest", status="NOT_FOUND", seconds=0.2)
    metrics.observe_batch("half", 8)
    text = registry.render()
    assert "# TYPE tfpilot_serve_requests_total counter" in text
    assert 'tfpilot_serve_requests_total{model="half",api="predict",protocol="rest",status="OK"} 1' in text
    assert 'tfpilot_serve_request_errors_total{model="half",api="predict",protocol="rest",status="NOT_FOUND"} 1' in text
    assert (
        'tfpilot_serve_request_latency_seconds_bucket{model="half",api="predict",protocol="rest",le="0.005"} 1' in text
    )
    assert (
        'tfpilot_serve_request_latency_seconds_bucket{model="half",api="predict",protocol="rest",le="+Inf"} 2' in text
    )
    assert 'tfpilot_serve_request_latency_seconds_count{model="half",api="predict",protocol="rest"} 2' in text
    assert 'tfpilot_serve_batch_size_bucket{model="half",le="4"} 0' in text
    assert 'tfpilot_serve_batch_size_bucket{model="half",le="8"} 1' in text
    assert text.endswith("\n")


def test_tf_serving_metric_names_labels_and_units():
    """Dashboards written for TF Serving query these exact names, labels and microsecond buckets."""
    registry = MetricsRegistry()
    metrics = ServerMetrics(registry)
    metrics.observe_request(model="half", api="predict", protocol="grpc", status="OK", seconds=0.003)
    metrics.observe_request(model="half", api="classify", protocol="rest", status="INVALID_ARGUMENT", seconds=0.5)
    metrics.observe_request(model="half", api="metadata", protocol="rest", status="OK", seconds=0.001)
    metrics.observe_examples("half", 3)
    metrics.observe_load(path="/models/half/1", ok=True, seconds=0.25)
    metrics.observe_load(path="/models/half/2", ok=False, seconds=0.01)
    text = registry.render()
    assert "# TYPE :tensorflow:serving:request_count counter" in text
    assert ':tensorflow:serving:request_count{model_name="half",status="OK"} 1' in text  # metadata is not counted
    assert ':tensorflow:serving:request_count{model_name="half",status="INVALID_ARGUMENT"} 1' in text
    # 3 ms = 3000 us: first bucket edge at or above it is 10 * 1.8**10 = 3570.4...
    assert (
        ':tensorflow:serving:request_latency_bucket{model_name="half",API="Predict",entrypoint="GRPC",le="3570.467226624'
        in text
    )
    assert ':tensorflow:serving:request_latency_count{model_name="half",API="Classify",entrypoint="REST"} 1' in text
    assert ':tensorflow:serving:request_latency_sum{model_name="half",API="Classify",entrypoint="REST"} 500000' in text
    assert ':tensorflow:serving:request_example_count_total{model="half"} 3' in text
    assert ':tensorflow:serving:request_example_counts_bucket{model="half",le="4"} 1' in text
    assert ':tensorflow:cc:saved_model:load_attempt_count{model_path="/models/half/1",status="success"} 1' in text
    assert ':tensorflow:cc:saved_model:load_attempt_count{model_path="/models/half/2",status="fail"} 1' in text
    assert ':tensorflow:cc:saved_model:load_latency{model_path="/models/half/1"} 250000' in text


def test_extension_gauges_are_computed_at_scrape_time_and_isolated():
    registry = MetricsRegistry()
    scores = {("age",): 0.1}
    registry.register_gauge("tfpilot_drift_score", "Drift per feature.", lambda: scores, labelnames=("feature",))
    registry.register_gauge("tfpilot_constant", "A plain number.", lambda: 3.5)
    registry.register_gauge("tfpilot_broken", "Raises.", lambda: 1 / 0)
    assert 'tfpilot_drift_score{feature="age"} 0.1' in registry.render()
    scores[("income",)] = 0.25
    text = registry.render()
    assert 'tfpilot_drift_score{feature="income"} 0.25' in text
    assert "tfpilot_constant 3.5" in text
    assert "tfpilot_broken" not in text  # a failing callback drops its metric, not the scrape
    registry.unregister("tfpilot_drift_score")
    assert "tfpilot_drift_score" not in registry.render()


def test_label_values_are_escaped_and_names_validated():
    registry = MetricsRegistry()
    counter = registry.counter("tfpilot_test_total", "Test.", ("model",))
    counter.inc(model='we"ird\\name\n')
    assert 'tfpilot_test_total{model="we\\"ird\\\\name\\n"} 1' in registry.render()
    with pytest.raises(ValueError, match="already registered"):
        registry.counter("tfpilot_test_total", "Again.")
    with pytest.raises(ValueError, match="invalid Prometheus metric name"):
        registry.gauge("bad-name", "x")
    with pytest.raises(ValueError, match="takes labels"):
        counter.inc(other="x")
