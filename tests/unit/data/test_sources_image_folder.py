"""Image-folder source: decoded pixels equal the PNG's pixels; bad folders raise DataError."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tfpilot.config.schema import DataConfig
from tfpilot.data import build_pipeline, image_folder_source, load_source
from tfpilot.errors import DataError


def write_png(path: Path, pixels: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(tf.io.encode_png(pixels).numpy())


def image_config(root: Path, **image) -> DataConfig:
    return DataConfig(kind="image_folder", path=root, image={"height": 8, "width": 8, "channels": 1, **image})


@pytest.fixture
def tiny_folder(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    written = {}
    for label in ("cat", "dog", "eel"):
        for index in range(3):
            pixels = rng.integers(0, 256, size=(8, 8, 1), dtype=np.uint8)
            path = tmp_path / "images" / label / f"{index}.png"
            write_png(path, pixels)
            written[str(path)] = pixels
    (tmp_path / "images" / "cat" / "notes.txt").write_text("not an image")
    (tmp_path / "images" / ".hidden").mkdir()
    return tmp_path / "images", written


def test_decode_equals_png_pixels(tiny_folder) -> None:
    root, written = tiny_folder
    source = image_folder_source(image_config(root))
    assert source.class_names == ["cat", "dog", "eel"]
    assert len(source) == 9  # notes.txt and the hidden folder are ignored
    assert source.labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert source.feature_spec["image"] == tf.TensorSpec([8, 8, 1], tf.uint8)
    for path, label in zip(source.records["path"], source.labels, strict=False):
        decoded = source.decode({"path": tf.constant(path)})["image"]
        assert decoded.dtype == tf.uint8
        np.testing.assert_array_equal(decoded.numpy(), written[path])
        assert source.class_names[label] == Path(path).parent.name


def test_bundled_digits_pixels_survive_the_pipeline(digits_folder: Path) -> None:
    """The raw split the server would receive holds exactly the PNG bytes' pixels."""
    pipeline = build_pipeline(image_config(digits_folder), batch_size=32, seed=0)
    assert pipeline.num_classes == 10
    assert sum(pipeline.num_examples(s) for s in ("train", "validation", "test")) == 1797
    paths = pipeline.source.records["path"][pipeline.indices["test"][:5]]
    for (features, label), path in zip(pipeline.raw("test").take(5), paths, strict=False):
        png = tf.io.decode_png(tf.io.read_file(path), channels=1).numpy()
        np.testing.assert_array_equal(features["image"].numpy(), png)
        assert pipeline.class_names[int(label)] == Path(path).parent.name
    # The model input is the same pixels scaled to [0, 1].
    features, _ = next(iter(pipeline.evaluation("test", batch_size=5)))
    first = tf.io.decode_png(tf.io.read_file(paths[0]), channels=1).numpy()
    np.testing.assert_allclose(features[0].numpy(), first / 255.0, atol=1e-7)


def test_other_sizes_are_resized_and_rgb_is_converted(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    for label in ("a", "b"):
        write_png(tmp_path / label / "big.png", rng.integers(0, 256, size=(16, 12, 3), dtype=np.uint8))
        write_png(tmp_path / label / "gray.png", np.full((8, 8, 1), 200, np.uint8))
    rgb = image_folder_source(image_config(tmp_path, channels=3))
    images = [rgb.decode({"path": tf.constant(p)})["image"].numpy() for p in rgb.records["path"]]
    assert all(image.shape == (8, 8, 3) and image.dtype == np.uint8 for image in images)
    gray_as_rgb = images[list(rgb.records["path"]).index(str(tmp_path / "a" / "gray.png"))]
    assert (gray_as_rgb == 200).all()
    gray = image_folder_source(image_config(tmp_path, height=4, width=4))
    small = gray.decode({"path": tf.constant(str(tmp_path / "a" / "gray.png"))})["image"].numpy()
    assert small.shape == (4, 4, 1) and (small == 200).all()


def test_jpeg_files_are_read(tmp_path: Path) -> None:
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        (tmp_path / label / "x.JPG").write_bytes(
            tf.io.encode_jpeg(np.full((8, 8, 1), 90, np.uint8), quality=100).numpy()
        )
    source = image_folder_source(image_config(tmp_path, extensions=[".jpg"]))
    assert len(source) == 2
    image = source.decode({"path": tf.constant(source.records["path"][0])})["image"].numpy()
    assert abs(int(image.mean()) - 90) <= 2  # JPEG is lossy even at quality 100


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        ({}, "0 class folder(s)"),
        ({"only": 2}, "1 class folder(s)"),
        ({"a": 0, "b": 0}, "0 image(s)"),
    ],
)
def test_bad_folders_raise_data_error(tmp_path: Path, layout: dict[str, int], expected: str) -> None:
    root = tmp_path / "images"
    root.mkdir()
    for label, count in layout.items():
        (root / label).mkdir()
        for index in range(count):
            write_png(root / label / f"{index}.png", np.zeros((8, 8, 1), np.uint8))
    with pytest.raises(DataError, match="expected at least 2") as caught:
        load_source(image_config(root))
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_path_that_is_a_file_raises_data_error(tmp_path: Path) -> None:
    (tmp_path / "file.png").write_bytes(b"")
    with pytest.raises(DataError, match="one subfolder per class"):
        load_source(image_config(tmp_path / "file.png"))


def test_too_few_examples_to_split(tmp_path: Path) -> None:
    for label in ("a", "b"):
        write_png(tmp_path / label / "0.png", np.zeros((8, 8, 1), np.uint8))
    with pytest.raises(DataError, match="found 2 example"):
        build_pipeline(image_config(tmp_path), batch_size=2)


def test_corrupt_or_empty_image_files_raise_data_error_naming_them(tiny_folder) -> None:
    root, _ = tiny_folder
    (root / "dog" / "broken.png").write_bytes(b"<html>not a png</html>")
    (root / "eel" / "empty.jpg").write_bytes(b"")
    with pytest.raises(DataError, match=r"2 image file\(s\) do not decode") as caught:
        load_source(image_config(root))
    assert "broken.png" in str(caught.value) and "empty.jpg" in str(caught.value)
    assert "\n" not in str(caught.value)
