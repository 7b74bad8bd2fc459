"""Reference statistics computed through real tf.data pipelines (CSV and image folders)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from tfpilot.config import config_from_dict
from tfpilot.data import build_pipeline
from tfpilot.monitor import compute_reference_stats, load_reference_stats, write_reference_stats


@pytest.fixture
def csv_pipeline(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "table.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["age", "city", "label"])
        for i in range(200):
            writer.writerow([f"{rng.normal(40, 10):.3f}", ["paris", "rome"][i % 4 == 0], i % 2])
    config = config_from_dict(
        {
            "data": {
                "kind": "csv",
                "path": str(path),
                "csv": {"categorical_columns": ["city"]},
                "split": {"validation": 0.1, "test": 0.1, "seed": 0},
            }
        }
    )
    return build_pipeline(config.data, batch_size=32, seed=0)


def test_csv_stats_match_numpy_on_the_training_split(csv_pipeline, tmp_path):
    stats = compute_reference_stats(csv_pipeline)
    train = csv_pipeline.indices["train"]
    ages = csv_pipeline.source.records["age"][train].astype(np.float64)
    age = stats["features"]["age"]
    assert stats["num_examples"] == train.size == age["count"]
    assert age["kind"] == "numeric"
    assert age["mean"] == pytest.approx(ages.mean(), rel=1e-6)
    assert age["std"] == pytest.approx(ages.std(), rel=1e-5)
    assert age["min"] == pytest.approx(ages.min()) and age["max"] == pytest.approx(ages.max())
    assert age["quantiles"]["p50"] == pytest.approx(np.median(ages), rel=1e-6)
    assert sum(age["histogram"]["counts"]) == train.size
    city = stats["features"]["city"]
    cities = csv_pipeline.source.records["city"][train]
    assert city["kind"] == "categorical"
    assert city["frequencies"]["rome"] == pytest.approx(np.mean(cities == "rome"))
    labels = csv_pipeline.source.labels[train]
    assert stats["labels"]["counts"] == np.bincount(labels, minlength=2).tolist()
    path = write_reference_stats(stats, tmp_path / "run" / "reference_stats.json")
    json.loads(path.read_text())  # strict JSON: no NaN tokens
    assert load_reference_stats(tmp_path / "run")["features"]["age"]["mean"] == age["mean"]


def test_image_stats_per_channel(digits_folder):
    config = config_from_dict({"data": {"kind": "image_folder", "path": str(digits_folder)}})
    pipeline = build_pipeline(config.data, batch_size=64, seed=0)
    stats = compute_reference_stats(pipeline, max_examples=300)
    image = stats["features"]["image"]
    assert image["kind"] == "image" and image["shape"] == [8, 8, 1] and image["count"] == 300
    pixels = np.stack([f["image"].numpy() for f, _ in pipeline.raw("train").take(300)]).astype(np.float64)
    assert image["channel_mean"][0] == pytest.approx(pixels.mean(), rel=1e-9)
    assert sum(image["histogram"]["counts"][0]) == pixels.size
    assert len(image["image_mean"][0]["sample"]) == 300
    assert len(stats["labels"]["class_names"]) == 10


def test_missing_reference_stats_is_a_clear_error(tmp_path):
    from tfpilot.errors import MonitorError

    with pytest.raises(MonitorError, match="reference_stats.json"):
        load_reference_stats(tmp_path)
