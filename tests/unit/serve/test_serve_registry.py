"""Version discovery, policies, labels, broken versions and warmup, on real SavedModels."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path

import numpy as np
import pytest

from tfpilot.errors import ServeError
from tfpilot.serve import demo_models
from tfpilot.serve.model_config import ServedModel, VersionPolicy
from tfpilot.serve.registry import ModelRegistry, ModelState
from tfpilot.serve.rest import metadata_json
from tfpilot.serve.servable import CLASSIFY_METHOD, REGRESS_METHOD, load_servable
from tfpilot.serve.status import Code, RequestError
from tfpilot.serve.warmup import WARMUP_FILE, warmup_servable


@pytest.fixture(autouse=True)
def _unfreeze_garbage_collector():
    # ModelRegistry.poll() freezes the collector's view of loaded models; these tests never
    # stop a server (which would unfreeze), so hand ordinary collection back to the session.
    yield
    gc.unfreeze()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """One half_plus_two per offset: version N answers 0.5 x + N + 1 (so N is visible)."""
    root = tmp_path_factory.mktemp("built")
    for version in (1, 2, 3):
        demo_models.write_half_plus_two(root / "half", version, offset=version + 1.0)
    demo_models.write_corrupt_version(root / "corrupt", 1)
    return root


def make_base(tmp_path: Path, built: Path, versions: list[int]) -> Path:
    base = tmp_path / "model"
    base.mkdir()
    for version in versions:
        shutil.copytree(built / "half" / str(version), base / str(version))
    return base


def predict(registry: ModelRegistry, **spec) -> tuple[int, float]:
    servable = registry.resolve("half", **spec)
    y = servable.run("serving_default", {"x": np.array([2.0], np.float32)})["y"]
    return servable.version, float(y[0])


def test_poll_freezes_loaded_models_out_of_garbage_collection(tmp_path, built):
    base = make_base(tmp_path, built, [1])
    gc.unfreeze()
    registry = ModelRegistry([ServedModel(name="half", base_path=base)])
    registry.poll()
    assert gc.get_freeze_count() > 10_000  # the loaded graph is no longer walked by collections
    registry.unload_all()
    assert gc.get_freeze_count() == 0


def test_only_complete_numeric_versions_load_and_latest_wins(tmp_path, built):
    base = make_base(tmp_path, built, [1, 3])
    (base / "7").mkdir()  # incomplete: no saved_model.pb, no variables/
    (base / "8").mkdir()
    (base / "8" / "saved_model.pb").write_bytes(b"")  # incomplete: no variables/
    shutil.copytree(built / "half" / "2", base / "not_a_version")
    shutil.copytree(built / "half" / "2", base / ".9.partial")
    registry = ModelRegistry([ServedModel(name="half", base_path=base)])
    registry.poll()
    assert [(s.version, s.state) for s in registry.status("half")] == [(3, ModelState.AVAILABLE)]
    assert predict(registry) == (3, 5.0)
    assert registry.readiness() == {"half": True}
    with pytest.raises(RequestError) as missing:
        registry.resolve("half", version=1)
    assert missing.value.code == Code.NOT_FOUND and "Specific(half, 1)" in missing.value.message


def test_policies_and_labels(tmp_path, built):
    base = make_base(tmp_path, built, [1, 2, 3])
    two = ServedModel(name="half", base_path=base, version_policy=VersionPolicy("latest", 2))
    # stable -> 1 names a version that is not loaded when the labels arrive (see test_serve_load_flags)
    registry = ModelRegistry([two], allow_version_labels_for_unavailable_models=True)
    registry.poll()
    assert [s.version for s in registry.status("half")] == [3, 2]
    registry.set_models(
        [
            ServedModel(
                name="half",
                base_path=base,
                version_policy=VersionPolicy("specific", versions=(1, 3)),
                version_labels={"stable": 1, "canary": 3},
            )
        ]
    )
    registry.poll()
    states = {s.version: s.state for s in registry.status("half")}
    assert states == {3: ModelState.AVAILABLE, 2: ModelState.END, 1: ModelState.AVAILABLE}
    assert predict(registry, label="stable") == (1, 3.0)
    assert predict(registry, label="canary") == (3, 5.0)
    assert registry.status("half", label="stable")[0].version == 1
    with pytest.raises(RequestError, match="Unrecognized servable version label: beta") as caught:
        registry.resolve("half", label="beta")
    assert caught.value.code == Code.INVALID_ARGUMENT
    with pytest.raises(RequestError, match="Could not find any versions of model nope"):
        registry.status("nope")


def test_broken_version_reports_error_keeps_old_serving_and_recovers(tmp_path, built):
    base = make_base(tmp_path, built, [1])
    calls = []

    def counting_loader(**kwargs):
        calls.append(kwargs["version"])
        return load_servable(**kwargs)

    registry = ModelRegistry([ServedModel(name="half", base_path=base)], loader=counting_loader)
    registry.poll()
    shutil.copytree(built / "corrupt" / "1", base / "2")
    registry.poll()
    broken = registry.status("half", version=2)[0]
    assert broken.state == ModelState.END and broken.error_code == Code.UNKNOWN
    assert "saved_model.pb" in broken.error_message
    assert predict(registry) == (1, 3.0)  # the old version never stopped serving
    registry.poll()
    assert calls == [1, 2]  # unchanged broken files are not retried
    shutil.rmtree(base / "2")
    shutil.copytree(built / "half" / "2", base / "2")  # the copy completes / is fixed
    registry.poll()
    assert predict(registry) == (2, 4.0)
    assert {s.version: s.state for s in registry.status("half")} == {2: ModelState.AVAILABLE, 1: ModelState.END}
    shutil.rmtree(base / "2")  # deleting the serving version falls back to what remains
    registry.poll()
    assert predict(registry) == (1, 3.0)
    # ... and the deleted version is reported as END, not forgotten
    assert {s.version: s.state for s in registry.status("half")} == {2: ModelState.END, 1: ModelState.AVAILABLE}


def test_a_broken_newest_version_falls_back_to_the_previous_one_in_the_same_poll(tmp_path, built):
    base = make_base(tmp_path, built, [1])
    shutil.copytree(built / "corrupt" / "1", base / "2")
    registry = ModelRegistry([ServedModel(name="half", base_path=base)])
    registry.poll()  # a single poll, as with --file_system_poll_wait_seconds=0
    assert predict(registry) == (1, 3.0)
    assert {s.version: s.state for s in registry.status("half")} == {2: ModelState.END, 1: ModelState.AVAILABLE}


def test_no_available_version_is_not_found_as_tf_serving_answers(tmp_path, built):
    """TF Serving (ServerCore::GetServableHandle) answers a configured model with no loaded
    version NOT_FOUND "Servable not found for request: Latest(NAME)"; clients read 404 as "no
    such model yet"."""
    base = tmp_path / "empty"
    base.mkdir()
    registry = ModelRegistry([ServedModel(name="half", base_path=base)])
    registry.poll()
    with pytest.raises(RequestError) as caught:
        registry.resolve("half")
    assert caught.value.code == Code.NOT_FOUND
    assert caught.value.message == "Servable not found for request: Latest(half)"
    assert registry.readiness() == {"half": False}


def write_warmup(version_dir: Path, inputs: dict[str, np.ndarray], count: int) -> None:
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    (version_dir / "assets.extra").mkdir(exist_ok=True)
    with tf.io.TFRecordWriter(str(version_dir / WARMUP_FILE)) as writer:
        for _ in range(count):
            log = prediction_log_pb2.PredictionLog()
            request = log.predict_log.request
            request.model_spec.name = "half"
            for name, value in inputs.items():
                request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
            writer.write(log.SerializeToString())


def test_warmup_records_are_replayed_and_a_failing_record_blocks_the_version(tmp_path, built):
    base = make_base(tmp_path, built, [1, 2])
    write_warmup(base / "1", {"x": np.array([1.0, 2.0], np.float32)}, count=3)
    servable = load_servable(name="half", version=1, path=base / "1")
    assert warmup_servable(servable) == 3
    write_warmup(base / "2", {"wrong_name": np.array([1.0], np.float32)}, count=1)
    registry = ModelRegistry([ServedModel(name="half", base_path=base, version_policy=VersionPolicy("all"))])
    registry.poll()
    failed = registry.status("half", version=2)[0]
    assert failed.state == ModelState.END and "warmup record 0" in failed.error_message
    assert predict(registry) == (1, 3.0)


def test_warmup_iterations_replay_each_record_that_many_times(tmp_path, built):
    base = make_base(tmp_path, built, [1])
    write_warmup(base / "1", {"x": np.array([1.0, 2.0], np.float32)}, count=2)
    servable = load_servable(name="half", version=1, path=base / "1")
    calls = []
    real_run = servable.run

    def counting_run(signature_name, inputs):
        calls.append(signature_name)
        return real_run(signature_name, inputs)

    servable.run = counting_run  # type: ignore[method-assign]  # count the real calls made
    warmup_servable(servable, iterations=3)
    assert len(calls) == 6


def test_saved_model_tags_choose_the_meta_graph(built):
    with pytest.raises(ServeError, match="failed to load SavedModel"):
        load_servable(name="half", version=1, path=built / "half" / "1", tags=("serve", "gpu"))
    assert load_servable(name="half", version=1, path=built / "half" / "1", tags=("serve",)).signatures


def test_metadata_comes_from_the_saved_model_proto(built):
    servable = load_servable(name="half", version=1, path=built / "half" / "1")
    assert servable.signatures["classify_x_to_y"].method_name == CLASSIFY_METHOD
    assert servable.signatures["regress_x_to_y"].method_name == REGRESS_METHOD
    document = metadata_json(servable)
    assert document["model_spec"] == {"name": "half", "signature_name": "", "version": "1"}
    default = document["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert default["method_name"] == "tensorflow/serving/predict"
    assert default["inputs"]["x"] == {
        "dtype": "DT_FLOAT",
        "tensor_shape": {"dim": [{"size": "-1", "name": ""}], "unknown_rank": False},
        "name": "serving_default_x:0",
    }
    assert "__saved_model_init_op" in document["metadata"]["signature_def"]["signature_def"]
    with pytest.raises(RequestError) as caught:
        servable.run("classify_x_to_y", {"inputs": np.array([b"not an example"], dtype=object)})
    assert caught.value.code == Code.INVALID_ARGUMENT
    with pytest.raises(RequestError, match='signature name: "nope" not found.*serving_default'):
        servable.signature("nope")
