"""Built-in architectures and user factories `package.module:factory`."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tfpilot.config.schema import ModelConfig
from tfpilot.errors import ModelError
from tfpilot.models import build_model


@pytest.mark.parametrize(
    ("config", "input_shape"),
    [
        (ModelConfig(name="mlp", hidden_units=[16, 8]), (8, 8, 1)),
        (ModelConfig(name="mlp", hidden_units=[4], dropout=0), (5,)),
        (ModelConfig(name="cnn", filters=[4, 8], hidden_units=[8]), (8, 8, 1)),
        (ModelConfig(name="cnn", filters=[4], hidden_units=[], dropout=0), (16, 12, 3)),
    ],
)
def test_builtin_shapes(config: ModelConfig, input_shape: tuple[int, ...]) -> None:
    model = build_model(config, input_shape=input_shape, num_classes=7)
    batch = np.random.default_rng(0).random((3, *input_shape), dtype=np.float32)
    logits = np.asarray(model(batch, training=False))
    assert logits.shape == (3, 7)
    assert np.isfinite(logits).all()
    # Logits, not probabilities: softmax belongs to the loss and the serving signature.
    assert not np.allclose(logits.sum(axis=-1), 1.0)


def test_mlp_layers_follow_config() -> None:
    model = build_model(ModelConfig(name="mlp", hidden_units=[16, 8], dropout=0.5), input_shape=(4,), num_classes=3)
    dense = [layer.units for layer in model.layers if layer.__class__.__name__ == "Dense"]
    assert dense == [16, 8, 3]
    assert sum(layer.__class__.__name__ == "Dropout" for layer in model.layers) == 2
    assert model.count_params() == (4 * 16 + 16) + (16 * 8 + 8) + (8 * 3 + 3)


def test_cnn_needs_image_input() -> None:
    with pytest.raises(ModelError, match=r"cnn needs image input"):
        build_model(ModelConfig(name="cnn"), input_shape=(10,), num_classes=2)


FACTORY_MODULE = """
import keras

def build(input_shape, num_classes, width=4):
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Flatten()(inputs)
    x = keras.layers.Dense(width, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(num_classes)(x))

def build_with_kwargs(**kwargs):
    return build(kwargs["input_shape"], kwargs["num_classes"], width=kwargs.get("width", 2))

def wrong_units(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)
    return keras.Model(inputs, keras.layers.Dense(num_classes + 1)(keras.layers.Flatten()(inputs)))

def not_a_model(input_shape, num_classes):
    return "model"

not_callable = 3
"""


@pytest.fixture
def user_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    package = tmp_path / "mymodels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "nets.py").write_text(textwrap.dedent(FACTORY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "mymodels.nets"
    for name in ("mymodels.nets", "mymodels"):
        sys.modules.pop(name, None)


def test_user_factory_gets_shape_classes_and_kwargs(user_package: str) -> None:
    model = build_model(
        ModelConfig(name=f"{user_package}:build", kwargs={"width": 5}), input_shape=(3, 2), num_classes=4
    )
    assert model.output_shape == (None, 4)
    assert [layer.units for layer in model.layers if hasattr(layer, "units")] == [5, 4]
    flexible = build_model(
        ModelConfig(name=f"{user_package}:build_with_kwargs", kwargs={"width": 6}), input_shape=(3,), num_classes=2
    )
    assert [layer.units for layer in flexible.layers if hasattr(layer, "units")] == [6, 2]


@pytest.mark.parametrize(
    ("attr", "match"),
    [
        ("missing", "has no callable `missing`"),
        ("not_callable", "has no callable `not_callable`"),
        ("not_a_model", "returned str; expected a keras.Model"),
        ("wrong_units", r"outputs 4 units; expected 3 logit\(s\)"),
    ],
)
def test_bad_user_factory_raises_model_error(user_package: str, attr: str, match: str) -> None:
    with pytest.raises(ModelError, match=match) as caught:
        build_model(ModelConfig(name=f"{user_package}:{attr}"), input_shape=(2,), num_classes=3)
    assert "\n" not in str(caught.value)


def test_unimportable_module_raises_model_error() -> None:
    with pytest.raises(ModelError, match="cannot import module `no_such_package.nets`") as caught:
        build_model(ModelConfig(name="no_such_package.nets:build"), input_shape=(2,), num_classes=3)
    assert "PYTHONPATH" in str(caught.value)


def test_malformed_factory_names_are_config_errors() -> None:
    import pydantic

    for bad in ("pkg.mod:", "pkg mod:build", "unknown_builtin", ":build"):
        with pytest.raises(pydantic.ValidationError):
            ModelConfig(name=bad)


def test_factory_that_raises_becomes_one_line_model_error(user_package: str, tmp_path: Path) -> None:
    (tmp_path / "mymodels" / "broken.py").write_text(
        "def needs_depth(input_shape, num_classes, depth):\n    return None\n\n"
        "def crashes(input_shape, num_classes):\n    raise RuntimeError('bad layer\\nsecond line')\n"
    )
    with pytest.raises(ModelError, match=r"raised TypeError: .*depth.*model.kwargs") as caught:
        build_model(ModelConfig(name="mymodels.broken:needs_depth"), input_shape=(2,), num_classes=3)
    assert "\n" not in str(caught.value)
    with pytest.raises(ModelError, match=r"raised RuntimeError: bad layer;") as caught:
        build_model(ModelConfig(name="mymodels.broken:crashes"), input_shape=(2,), num_classes=3)
    assert isinstance(caught.value.__cause__, RuntimeError)
    sys.modules.pop("mymodels.broken", None)
