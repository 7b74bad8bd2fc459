"""DriftWindow over a real SQLite request log, exposed through the server's metrics registry."""

from __future__ import annotations

import numpy as np

from tfpilot.monitor import DriftWindow
from tfpilot.monitor.statistics import feature_statistics
from tfpilot.serve.metrics import MetricsRegistry
from tfpilot.serve.request_log import RequestLog


def test_window_scores_follow_the_newest_traffic(tmp_path):
    rng = np.random.default_rng(0)
    reference = {
        "features": {"x": feature_statistics(rng.normal(size=2000), kind="numeric", dtype="float32")},
        "labels": {"class_names": ["a", "b"], "counts": [1, 1], "frequencies": [0.5, 0.5]},
    }
    log_path = tmp_path / "requests.db"
    window = DriftWindow(reference, log_path, window=100, min_interval_s=0.0)
    assert window.scores() == {}  # no log yet: nothing to report, no error
    log = RequestLog(log_path)
    try:
        for _ in range(10):
            log.record(
                model="m",
                version=1,
                signature="serving_default",
                inputs={"x": rng.normal(size=10).astype(np.float32)},
                outputs={"class_id": rng.integers(0, 2, 10)},
            )
        log.flush()
        calm = window.scores()
        assert set(calm) == {"x", "prediction"} and calm["x"]["ks_pvalue"] > 0.001
        for _ in range(10):
            log.record(
                model="m",
                version=1,
                signature="serving_default",
                inputs={"x": rng.normal(3.0, 1.0, size=10).astype(np.float32)},
                outputs={"class_id": rng.integers(0, 2, 10)},
            )
        log.flush()
        shifted = window.scores()
        assert shifted["x"]["js"] > 0.3 and shifted["x"]["ks_pvalue"] < 1e-6
        registry = MetricsRegistry()
        window.register(registry)
        text = registry.render()
        assert 'tfpilot_drift_score{feature="x",score="js"}' in text
        assert 'tfpilot_drift_detected{feature="x"} 1' in text
        assert "tfpilot_drift_window_examples 100" in text
    finally:
        log.close()
