"""The drift engine on synthetic reference statistics and logged requests."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from tfpilot.findings import Severity
from tfpilot.monitor import DriftThresholds, compute_drift, current_from_requests, drift_findings
from tfpilot.monitor.statistics import bin_counts, feature_statistics
from tfpilot.serve.request_log import LoggedRequest

CLASSES = ["a", "b", "c"]


def _reference(rng: np.random.Generator) -> dict:
    size = 3000
    return {
        "features": {
            "age": feature_statistics(rng.normal(40, 10, size), kind="numeric", dtype="float32"),
            "city": feature_statistics(
                rng.choice(["paris", "rome", "oslo"], size, p=[0.5, 0.3, 0.2]).astype(object),
                kind="categorical",
                dtype="string",
            ),
            "image": feature_statistics(
                rng.integers(0, 128, (500, 4, 4, 1)).astype(np.uint8), kind="image", dtype="uint8"
            ),
        },
        "labels": {"class_names": CLASSES, "counts": [100, 100, 100], "frequencies": [1 / 3] * 3},
    }


def _requests(
    rng: np.random.Generator,
    *,
    count: int,
    age_shift: float = 0.0,
    brighten: int = 0,
    city_p=(0.5, 0.3, 0.2),
    predictions=(1 / 3, 1 / 3, 1 / 3),
    batch: int = 10,
) -> list[LoggedRequest]:
    requests = []
    for _ in range(count // batch):
        cities = rng.choice(["paris", "rome", "oslo"], batch, p=list(city_p))
        images = np.clip(rng.integers(0, 128, (batch, 4, 4, 1)) + brighten, 0, 255)
        ids = rng.choice(3, batch, p=list(predictions))
        requests.append(
            LoggedRequest(
                timestamp=0.0,
                model="m",
                version=1,
                signature="serving_default",
                inputs={
                    "age": rng.normal(40 + age_shift, 10, batch).tolist(),
                    # The request log stores bytes base64-encoded.
                    "city": [base64.b64encode(c.encode()).decode() for c in cities],
                    "image": images.tolist(),
                },
                outputs={"class_id": ids.tolist(), "probabilities": np.eye(3)[ids].tolist()},
            )
        )
    return requests


def test_unshifted_traffic_does_not_drift():
    rng = np.random.default_rng(1)
    reference = _reference(rng)
    current = current_from_requests(_requests(rng, count=300), reference)
    report = compute_drift(reference, current, thresholds=DriftThresholds())
    assert current.num_examples == 300 and current.num_requests == 30
    assert not report.drifted, report.to_dict()
    assert drift_findings(report) == []
    assert report.scores()["city"]["linf"] < 0.1


def test_shifted_features_drift_and_only_they_do():
    rng = np.random.default_rng(2)
    reference = _reference(rng)
    requests = _requests(rng, count=300, age_shift=15.0, brighten=100)
    report = compute_drift(reference, current_from_requests(requests, reference))
    assert set(report.drifted_features()) == {"age", "image"}
    scores = report.scores()
    assert scores["age"]["ks_pvalue"] < 1e-6 and scores["age"]["psi"] > 0.2
    assert scores["image"]["js"] > 0.3
    findings = drift_findings(report, location="log.db")
    assert {f.code for f in findings} == {"MON-DRIFT-FEATURE"}
    assert all(f.severity == Severity.WARNING and f.location == "log.db" for f in findings)


def test_categorical_and_prediction_drift_use_linf():
    rng = np.random.default_rng(3)
    reference = _reference(rng)
    requests = _requests(rng, count=300, city_p=(0.1, 0.1, 0.8), predictions=(0.8, 0.1, 0.1))
    report = compute_drift(reference, current_from_requests(requests, reference))
    assert "city" in report.drifted_features() and "prediction" in report.drifted_features()
    assert report.scores()["city"]["linf"] > 0.5
    assert report.prediction is not None and any("linf" in r for r in report.prediction.reasons)
    assert "MON-DRIFT-PREDICTION" in {f.code for f in drift_findings(report)}


def test_window_keeps_the_newest_examples():
    rng = np.random.default_rng(4)
    reference = _reference(rng)
    requests = _requests(rng, count=200) + _requests(rng, count=100, age_shift=30.0)
    newest = current_from_requests(requests, reference, window=100)
    assert newest.num_examples == 100 and len(newest.predictions) == 100
    assert np.mean(newest.features["age"]) > 60
    assert compute_drift(reference, newest).drifted
    assert not compute_drift(reference, current_from_requests(requests[:20], reference)).drifted


def test_too_few_examples_give_no_verdict():
    rng = np.random.default_rng(5)
    reference = _reference(rng)
    report = compute_drift(reference, current_from_requests(_requests(rng, count=10, age_shift=50.0), reference))
    assert not report.drifted and report.drifted_features() == []
    findings = drift_findings(report)
    assert [f.code for f in findings] == ["MON-DRIFT-FEW-EXAMPLES"] and findings[0].severity == Severity.INFO


def test_requests_without_the_reference_features_are_skipped():
    rng = np.random.default_rng(6)
    reference = _reference(rng)
    other = LoggedRequest(0.0, "m", 1, "other", inputs={"x": [1.0]}, outputs={})
    current = current_from_requests([other, *_requests(rng, count=40)], reference)
    assert current.num_requests == 4 and current.num_examples == 40


def test_out_of_range_values_count_in_the_edge_bins():
    counts = bin_counts(np.array([-100.0, 0.5, 1.5, 2.5, 100.0, np.nan]), [0.0, 1.0, 2.0, 3.0])
    assert counts.tolist() == [2, 1, 2]


def test_image_shape_mismatch_is_an_error():
    from tfpilot.errors import MonitorError

    rng = np.random.default_rng(7)
    reference = _reference(rng)
    requests = _requests(rng, count=40)
    for request in requests:
        request.inputs["image"] = np.zeros((10, 5, 5, 1)).tolist()
    with pytest.raises(MonitorError, match="shape"):
        compute_drift(reference, current_from_requests(requests, reference))
