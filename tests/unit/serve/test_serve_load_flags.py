"""TF Serving's load flags on real SavedModels: load retries, load threads, version labels.

--max_num_load_retries / --load_retry_interval_micros, --num_load_threads and
--allow_version_labels_for_unavailable_models, exercised on the registry the server polls.
"""

from __future__ import annotations

import gc
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from tfpilot.serve import demo_models
from tfpilot.serve.model_config import ServedModel, VersionPolicy
from tfpilot.serve.registry import ModelRegistry, ModelState
from tfpilot.serve.servable import load_servable
from tfpilot.serve.status import Code, RequestError


@pytest.fixture(autouse=True)
def _unfreeze_garbage_collector():
    yield  # poll() freezes loaded graphs out of collections; hand collection back afterwards
    gc.unfreeze()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """half_plus_two versions 1..3 (version N answers 0.5 x + N + 1) and a corrupt version."""
    root = tmp_path_factory.mktemp("built")
    for version in (1, 2, 3):
        demo_models.write_half_plus_two(root / "half", version, offset=version + 1.0)
    demo_models.write_corrupt_version(root / "corrupt", 1)
    return root


def make_base(tmp_path: Path, built: Path, versions: list[int], *, name: str = "model") -> Path:
    base = tmp_path / name
    base.mkdir()
    for version in versions:
        shutil.copytree(built / "half" / str(version), base / str(version))
    return base


def answer(registry: ModelRegistry, name: str = "half", **spec) -> tuple[int, float]:
    servable = registry.resolve(name, **spec)
    y = servable.run("serving_default", {"x": np.array([2.0], np.float32)})["y"]
    return servable.version, float(y[0])


def states(registry: ModelRegistry, name: str = "half") -> dict[int, ModelState]:
    return {s.version: s.state for s in registry.status(name)}


class CountingLoader:
    """The real loader, counting its calls; fails while ``unavailable`` exists (a storage outage)."""

    def __init__(self, unavailable: Path | None = None) -> None:
        self.calls: list[int] = []
        self.unavailable = unavailable

    def __call__(self, **kwargs):
        self.calls.append(kwargs["version"])
        if self.unavailable is not None and self.unavailable.exists():
            raise OSError(f"storage unavailable: {self.unavailable}")
        return load_servable(**kwargs)


# ---------------------------------------------------------------------------- load retries


def test_a_failing_load_is_retried_then_ends_with_its_error_while_the_old_version_serves(tmp_path, built):
    base = make_base(tmp_path, built, [1])
    shutil.copytree(built / "corrupt" / "1", base / "2")
    loader = CountingLoader()
    registry = ModelRegistry(
        [ServedModel(name="half", base_path=base)],
        loader=loader,
        max_num_load_retries=2,
        load_retry_interval_seconds=0.0,
    )
    registry.poll()
    waiting = registry.status("half", version=2)[0]
    assert waiting.state == ModelState.LOADING and waiting.error_code == Code.OK
    assert waiting.error_message.startswith("load attempt 1 of 3 failed, retrying in 0 s:")
    assert registry.next_retry_in() == 0.0
    assert answer(registry) == (1, 3.0)  # the previous version serves while the new one retries
    registry.poll()
    assert "load attempt 2 of 3" in registry.status("half", version=2)[0].error_message
    registry.poll()
    ended = registry.status("half", version=2)[0]
    assert ended.state == ModelState.END and ended.error_code == Code.UNKNOWN
    assert "saved_model.pb" in ended.error_message and ended.error_message.endswith("(after 3 load attempts)")
    assert registry.next_retry_in() is None
    registry.poll()
    assert loader.calls == [2, 1, 2, 2]  # first try (falling back to 1), two retries, then no more
    assert states(registry) == {2: ModelState.END, 1: ModelState.AVAILABLE}


def test_a_transient_load_failure_recovers_on_a_retry_without_any_file_changing(tmp_path, built):
    base = make_base(tmp_path, built, [1, 2])
    outage = tmp_path / "outage"
    outage.touch()
    loader = CountingLoader(unavailable=outage)
    registry = ModelRegistry(
        [ServedModel(name="half", base_path=base)], loader=loader, max_num_load_retries=3, load_retry_interval_seconds=0
    )
    registry.poll()
    assert states(registry) == {2: ModelState.LOADING, 1: ModelState.LOADING}
    with pytest.raises(RequestError) as nothing_yet:
        registry.resolve("half")
    # TF Serving (ServerCore::GetServableHandle): NOT_FOUND "Servable not found for request: Latest(half)".
    assert nothing_yet.value.code == Code.NOT_FOUND
    outage.unlink()  # storage is back; the version files never changed
    registry.poll()
    assert answer(registry) == (2, 4.0)
    # the fallback's retries end once the version the policy wants serves
    assert states(registry) == {2: ModelState.AVAILABLE, 1: ModelState.END}
    assert registry.status("half", version=1)[0].error_code == Code.CANCELLED
    assert registry.next_retry_in() is None and loader.calls == [2, 1, 2]


def test_the_retry_interval_is_waited_and_zero_retries_mean_one_attempt(tmp_path, built):
    base = make_base(tmp_path, built, [])
    shutil.copytree(built / "corrupt" / "1", base / "1")
    loader = CountingLoader()
    patient = ModelRegistry(
        [ServedModel(name="half", base_path=base)],
        loader=loader,
        max_num_load_retries=5,
        load_retry_interval_seconds=3600,
    )
    patient.poll()
    patient.poll()
    assert loader.calls == [1]  # the retry is not due for an hour
    assert 3500 < (patient.next_retry_in() or 0) <= 3600
    once = CountingLoader()
    impatient = ModelRegistry([ServedModel(name="half", base_path=base)], loader=once, max_num_load_retries=0)
    impatient.poll()
    assert impatient.status("half")[0].state == ModelState.END and impatient.next_retry_in() is None
    assert "load attempts" not in impatient.status("half")[0].error_message


def test_a_waiting_retry_is_cancelled_when_a_newer_version_takes_over(tmp_path, built):
    base = make_base(tmp_path, built, [1])
    shutil.copytree(built / "corrupt" / "1", base / "2")
    registry = ModelRegistry(
        [ServedModel(name="half", base_path=base)], max_num_load_retries=5, load_retry_interval_seconds=3600
    )
    registry.poll()
    assert states(registry) == {2: ModelState.LOADING, 1: ModelState.AVAILABLE}
    shutil.copytree(built / "half" / "3", base / "3")
    registry.poll()
    assert answer(registry) == (3, 5.0)
    status = {s.version: s for s in registry.status("half")}
    assert status[2].state == ModelState.END and status[2].error_code == Code.CANCELLED
    assert "no longer wanted" in status[2].error_message and "saved_model.pb" in status[2].error_message
    assert status[1].state == ModelState.END and registry.next_retry_in() is None


def test_known_versions_only_revisits_retries_without_discovering_new_versions(tmp_path, built):
    base = make_base(tmp_path, built, [])
    shutil.copytree(built / "corrupt" / "1", base / "1")
    registry = ModelRegistry(
        [ServedModel(name="half", base_path=base)], max_num_load_retries=1, load_retry_interval_seconds=0
    )
    registry.poll()
    shutil.copytree(built / "half" / "2", base / "2")
    registry.poll(known_versions_only=True)  # what a server that does not poll its base paths runs
    assert states(registry) == {1: ModelState.END}
    registry.poll()
    assert answer(registry) == (2, 4.0)


# ---------------------------------------------------------------------------- load threads


def test_num_load_threads_loads_models_side_by_side_and_never_more_at_once(tmp_path, built):
    bases = [make_base(tmp_path, built, [1], name=f"m{index}") for index in range(3)]
    lock = threading.Lock()
    active, peak = [0], [0]
    two_at_once = threading.Event()

    def loader(**kwargs):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            if active[0] == 2:
                two_at_once.set()
        try:
            two_at_once.wait(timeout=60)  # serial loading would wait here for nothing
            return load_servable(**kwargs)
        finally:
            with lock:
                active[0] -= 1

    registry = ModelRegistry(
        [ServedModel(name=f"m{index}", base_path=base) for index, base in enumerate(bases)],
        loader=loader,
        num_load_threads=2,
    )
    registry.poll()
    assert two_at_once.is_set() and peak[0] == 2
    assert registry.readiness() == {"m0": True, "m1": True, "m2": True}


# ---------------------------------------------------------------------------- version labels


def specific(base: Path, versions: tuple[int, ...], labels: dict[str, int]) -> ServedModel:
    return ServedModel(
        name="half", base_path=base, version_policy=VersionPolicy("specific", versions=versions), version_labels=labels
    )


def test_labels_must_point_at_available_versions_unless_allowed(tmp_path, built):
    base = make_base(tmp_path, built, [1, 2, 3])
    registry = ModelRegistry([specific(base, (1,), {"stable": 1})])
    registry.poll()
    registry.check_version_labels()  # version 1 loaded: the startup check passes
    with pytest.raises(RequestError) as refused:
        registry.set_models([specific(base, (1, 2), {"stable": 1, "canary": 2})])
    assert refused.value.code == Code.FAILED_PRECONDITION
    assert "label canary to version 2 of model half, which is not currently available" in refused.value.message
    assert "--allow_version_labels_for_unavailable_models" in refused.value.message
    assert registry.labels("half") == {"stable": 1}  # refused as a whole: nothing changed
    registry.set_models([specific(base, (1, 2), {"stable": 1})])
    registry.poll()
    registry.set_models([specific(base, (1, 2), {"stable": 1, "canary": 2})])  # now 2 is AVAILABLE
    assert answer(registry, label="canary") == (2, 4.0)


def test_allowed_new_labels_may_point_at_versions_not_loaded_yet_but_labels_in_use_do_not_move_early(tmp_path, built):
    base = make_base(tmp_path, built, [1, 2, 3])
    registry = ModelRegistry([specific(base, (1,), {"stable": 1})], allow_version_labels_for_unavailable_models=True)
    registry.poll()
    registry.set_models([specific(base, (1, 2), {"stable": 1, "canary": 2})])  # canary is new: allowed
    with pytest.raises(RequestError) as loading:
        registry.resolve("half", label="canary")
    assert loading.value.code == Code.NOT_FOUND
    registry.poll()
    assert answer(registry, label="canary") == (2, 4.0)
    with pytest.raises(RequestError) as moved:  # stable is in use: it moves only to an AVAILABLE version
        registry.set_models([specific(base, (1, 2, 3), {"stable": 3, "canary": 2})])
    assert moved.value.code == Code.FAILED_PRECONDITION and "moves only to an AVAILABLE version" in moved.value.message
    assert answer(registry, label="stable") == (1, 3.0)


def test_the_startup_check_refuses_a_label_of_a_version_that_did_not_load(tmp_path, built):
    base = make_base(tmp_path, built, [1])
    strict = ModelRegistry([specific(base, (1, 9), {"stable": 1, "next": 9})])
    strict.poll()
    with pytest.raises(RequestError, match="label next to version 9 of model half"):
        strict.check_version_labels()
    allowed = ModelRegistry(
        [specific(base, (1, 9), {"stable": 1, "next": 9})], allow_version_labels_for_unavailable_models=True
    )
    allowed.poll()
    allowed.check_version_labels()
    assert answer(allowed, label="stable") == (1, 3.0)
