"""The image_bytes signature: encoded PNG/JPEG files in, the same predictions as the pixel signature."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from tfpilot.config.schema import DataConfig
from tfpilot.data import build_pipeline
from tfpilot.export import export_saved_model
from tfpilot.export.verify import run_with_session_loader


def test_encoded_files_give_the_pixel_signature_predictions_in_both_loaders(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for label in ("a", "b"):
        for i in range(6):
            shape = [(20, 9, 3), (7, 31, 1), (12, 12, 4)][i % 3]
            pixels = rng.integers(0, 256, size=shape, dtype=np.uint8)
            path = tmp_path / "images" / label / (f"{i}.jpg" if shape[2] != 4 and i % 2 else f"{i}.png")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes((tf.io.encode_jpeg(pixels) if path.suffix == ".jpg" else tf.io.encode_png(pixels)).numpy())
    config = DataConfig(
        kind="image_folder", path=tmp_path / "images", image={"height": 10, "width": 10, "channels": 3, "resize": "pad"}
    )
    pipeline = build_pipeline(config, batch_size=4)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((10, 10, 3)), keras.layers.Flatten(), keras.layers.Dense(2)])
    paths = list(pipeline.source.records["path"])
    pixels = np.stack([pipeline.source.decode({"path": tf.constant(p)})["image"].numpy() for p in paths])
    result = export_saved_model(
        model=model,
        preprocessor=pipeline.preprocessor,
        class_names=pipeline.class_names,
        base_path=tmp_path / "model",
        sample_features={"image": pixels[:4]},
        signatures=["serving_default", "image_bytes"],
    )
    encoded = np.array([Path(p).read_bytes() for p in paths], dtype=object)
    want = run_with_session_loader(result.path, {"image": pixels})["probabilities"]
    session = run_with_session_loader(result.path, {"image_bytes": encoded}, signature="image_bytes")
    np.testing.assert_allclose(session["probabilities"], want, atol=1e-6)
    loaded = tf.saved_model.load(str(result.path))
    python = loaded.signatures["image_bytes"](image_bytes=tf.constant(encoded))
    np.testing.assert_allclose(python["probabilities"].numpy(), want, atol=1e-6)
