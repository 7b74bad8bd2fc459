"""Model versions: discover them on disk, load and unload by policy, resolve requests.

A base path holds numeric version subdirectories (anything else is ignored). A version is
tried once it has its graph (saved_model.pb; variables/ may be absent, as TF Serving allows), and served only once
it has loaded and warmed up. Transitions preserve availability: a new version becomes
AVAILABLE before an old one unloads, and a version that fails to load is reported in status
(END with its error) while the versions already serving keep serving. A failed version is
retried only when its files change, so a half-copied version recovers once the copy ends.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import enum
import gc
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tfpilot.savedmodel.versions import is_complete_version, scan_versions
from tfpilot.serve.model_config import ServedModel, VersionPolicy, check_base_path
from tfpilot.serve.servable import Servable, load_servable
from tfpilot.serve.status import Code, RequestError
from tfpilot.serve.warmup import warmup_servable

__all__ = ["ModelState", "VersionStatus", "ModelRegistry"]

_log = logging.getLogger("tfpilot.serve")


class ModelState(enum.Enum):
    """TF Serving's ModelVersionStatus.State, with its proto numbers."""

    UNKNOWN = 0
    START = 10
    LOADING = 20
    AVAILABLE = 30
    UNLOADING = 40
    END = 50


@dataclasses.dataclass(frozen=True)
class VersionStatus:
    version: int
    state: ModelState
    error_code: Code = Code.OK
    error_message: str = ""

    def to_json(self) -> dict[str, Any]:
        # TF Serving's REST shape: int64 version as a string, enum names, status always present.
        return {
            "version": str(self.version),
            "state": self.state.name,
            "status": {"error_code": self.error_code.name, "error_message": self.error_message},
        }


@dataclasses.dataclass
class _Version:
    version: int
    path: Path
    state: ModelState
    servable: Servable | None = None
    error_code: Code = Code.OK
    error_message: str = ""
    fingerprint: tuple[Any, ...] | None = None
    failed_attempts: int = 0
    retry_at: float | None = None  # time.monotonic() of the next load attempt; set while LOADING

    @property
    def waiting_to_retry(self) -> bool:
        return self.state == ModelState.LOADING and self.retry_at is not None

    def status(self) -> VersionStatus:
        return VersionStatus(self.version, self.state, self.error_code, self.error_message)


@dataclasses.dataclass
class _Model:
    config: ServedModel
    versions: dict[int, _Version] = dataclasses.field(default_factory=dict)


def _fingerprint(path: Path) -> tuple[Any, ...]:
    items = []
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            try:
                info = os.stat(full)
            except OSError:
                continue
            items.append((os.path.relpath(full, path), info.st_size, info.st_mtime_ns))
    return tuple(sorted(items))


def _settle_garbage() -> None:
    """Collect once, then freeze every surviving object out of future collections.

    A loaded TF model is hundreds of thousands of tracked Python objects; a full collection
    walks them all and stalls every request for hundreds of milliseconds (REST's JSON makes
    collections frequent). Frozen objects are skipped, so collections stay ~1 ms; unfreezing
    and collecting here, when versions change, still frees the graphs of retired versions.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _describe(version: int | None, name: str) -> str:
    return f"Specific({name}, {version})" if version is not None else f"Latest({name})"


class ModelRegistry:
    """Thread-safe: ``poll`` runs in a background thread, ``resolve`` on the request path."""

    def __init__(
        self,
        models: list[ServedModel],
        *,
        enable_warmup: bool = True,
        loader: Callable[..., Servable] = load_servable,
        on_load: Callable[[Path, bool, float], None] | None = None,
        warmup_iterations: int = 1,
        max_num_load_retries: int = 0,
        load_retry_interval_seconds: float = 60.0,
        num_load_threads: int = 0,
        allow_version_labels_for_unavailable_models: bool = False,
    ) -> None:
        self._on_load = on_load
        self._max_num_load_retries = max_num_load_retries
        self._load_retry_interval = max(load_retry_interval_seconds, 0.0)
        self._allow_unavailable_labels = allow_version_labels_for_unavailable_models
        # With threads, the models of one poll load side by side (TF Serving's load thread pool).
        self._load_pool = (
            concurrent.futures.ThreadPoolExecutor(max_workers=num_load_threads, thread_name_prefix="tfpilot-load")
            if num_load_threads > 0
            else None
        )
        self._warmup_iterations = warmup_iterations
        self._lock = threading.RLock()
        self._poll_lock = threading.RLock()
        self._enable_warmup = enable_warmup
        self._loader = loader
        self._models: dict[str, _Model] = {}
        self.set_models(models, check_labels=False)  # nothing has loaded yet: see check_version_labels

    # ----------------------------------------------------------------------- config

    def set_models(self, models: list[ServedModel], *, check_labels: bool = True) -> None:
        """Serve exactly these models (the ModelService.HandleReloadConfigRequest semantics).

        Refused as a whole (FAILED_PRECONDITION, nothing changes) when a label points at a
        version that is not AVAILABLE, unless --allow_version_labels_for_unavailable_models
        lets a new label do so; moving a label in use always needs an AVAILABLE target, so
        requests for the label never land on a version that is still loading.
        """
        checked = []
        for model in models:
            path = check_base_path(model.base_path, model_name=model.name)
            checked.append(dataclasses.replace(model, base_path=path))
        names = [model.name for model in checked]
        if len(set(names)) != len(names):
            raise RequestError.invalid(f"model names must be unique, got {names}")
        removed: list[_Model] = []
        with self._poll_lock, self._lock:
            if check_labels:
                for model in checked:
                    self._check_labels(model)
            for name in list(self._models):
                if name not in names:
                    removed.append(self._models.pop(name))
            for model in checked:
                existing = self._models.get(model.name)
                if existing is None or existing.config.base_path != model.base_path:
                    if existing is not None:
                        removed.append(existing)
                    self._models[model.name] = _Model(model)
                else:
                    existing.config = model
        for stale in removed:
            for record in list(stale.versions.values()):
                self._unload(stale, record)

    def _check_labels(self, config: ServedModel, *, at_startup: bool = False) -> None:
        """Raise FAILED_PRECONDITION for a label TF Serving's UpdateModelVersionLabelMap refuses."""
        current = self._models.get(config.name)
        if current is not None and current.config.base_path != config.base_path:
            current = None  # a new base path starts with no version loaded
        for label, version in sorted(config.version_labels.items()):
            record = current.versions.get(version) if current is not None else None
            if record is not None and record.state == ModelState.AVAILABLE:
                continue
            # At startup every label is new: none was in use before this config.
            in_use = None if at_startup or current is None else current.config.version_labels.get(label)
            if self._allow_unavailable_labels and in_use in (None, version):
                continue
            hint = (
                "a label in use moves only to an AVAILABLE version: serve both versions first, then move it"
                if self._allow_unavailable_labels
                else "wait until it loads, or pass --allow_version_labels_for_unavailable_models"
            )
            raise RequestError(
                Code.FAILED_PRECONDITION,
                f"Request to assign label {label} to version {version} of model {config.name}, which is not "
                f"currently available for inference; {hint}",
            )

    def check_version_labels(self) -> None:
        """The startup check, once the first versions loaded (TF Serving's rule, see set_models)."""
        with self._lock:
            for model in self._models.values():
                self._check_labels(model.config, at_startup=True)

    def next_retry_in(self) -> float | None:
        """Seconds until the earliest load retry is due (0 when overdue), None when none waits."""
        with self._lock:
            due = [
                record.retry_at
                for model in self._models.values()
                for record in model.versions.values()
                if record.waiting_to_retry and record.retry_at is not None
            ]
        return max(0.0, min(due) - time.monotonic()) if due else None

    @property
    def models(self) -> list[ServedModel]:
        with self._lock:
            return [model.config for model in self._models.values()]

    def has_model(self, name: str) -> bool:
        return name in self._models

    def model_names(self) -> list[str]:
        with self._lock:
            return sorted(self._models)

    # ------------------------------------------------------------------------ polling

    def poll(self, *, known_versions_only: bool = False) -> None:
        """One pass over every base path: load what the policy wants, then unload the rest.

        ``known_versions_only`` revisits only versions seen before (the load-retry passes of a
        server that does not poll its base paths).
        """
        with self._poll_lock:
            with self._lock:
                models = list(self._models.values())

            def poll_one(model: _Model) -> bool:
                try:
                    return self._poll_model(model, known_versions_only=known_versions_only)
                except Exception:  # one model's surprise must not stop the others reloading
                    _log.exception("polling model %s failed", model.config.name)
                    return False

            if self._load_pool is not None and len(models) > 1:
                changed = any(list(self._load_pool.map(poll_one, models)))
            else:
                changed = any([poll_one(model) for model in models])
            if changed:
                _settle_garbage()

    def _poll_model(self, model: _Model, *, known_versions_only: bool = False) -> bool:
        """Returns whether a version was loaded or unloaded."""
        config = model.config
        on_disk = scan_versions(config.base_path)
        complete = {version: path for version, path in on_disk.items() if is_complete_version(path)}
        if known_versions_only:
            complete = {version: path for version, path in complete.items() if version in model.versions}
        aspired: set[int] = set()
        changed = False
        now = time.monotonic()
        # When a wanted version fails, the policy picks again among the rest (latest 1 with a
        # broken newest version falls back to the one before it) within this same poll; a
        # version waiting for its load retry counts as failed until its retry is due.
        for _ in range(len(complete) + 1):
            candidates = []
            for version, path in complete.items():
                record = model.versions.get(version)
                if record is not None and record.waiting_to_retry:
                    if record.retry_at is not None and record.retry_at > now:
                        continue
                elif record is not None and record.fingerprint is not None and record.fingerprint == _fingerprint(path):
                    continue  # failed before and unchanged since: do not hammer the loader
                candidates.append(version)
            aspired = config.version_policy.select(candidates)
            failed = False
            for version in sorted(aspired, reverse=True):
                record = model.versions.get(version)
                if record is None or record.state != ModelState.AVAILABLE:
                    failures = record.failed_attempts if record is not None and record.waiting_to_retry else 0
                    loaded = self._load(model, version, complete[version], failed_attempts=failures)
                    changed = True
                    failed |= not loaded
            if not failed:
                break
        changed |= self._cancel_unwanted_retries(model, complete)
        with self._lock:
            serving = [r for v, r in model.versions.items() if v in aspired and r.state == ModelState.AVAILABLE]
            retire = [
                record
                for version, record in model.versions.items()
                if record.state == ModelState.AVAILABLE
                and version not in aspired
                and (serving or version not in on_disk)
            ]
        # A version deleted from disk stays in status as END (TF Serving's monitor keeps it, and
        # dashboards show that it was unloaded rather than losing track of it).
        for record in retire:
            self._unload(model, record)
        return changed or bool(retire)

    def _cancel_unwanted_retries(self, model: _Model, complete: dict[int, Path]) -> bool:
        """End the load retries of versions nobody needs any more.

        A version waiting for a retry ends when it left the disk, or when the policy prefers
        other versions and those are all AVAILABLE (a fallback retried meanwhile is no longer
        needed once the version the policy wants serves).
        """
        with self._lock:
            waiting = {v: r for v, r in model.versions.items() if r.waiting_to_retry}
        if not waiting:
            return False
        eligible = []
        for version, path in complete.items():
            record = model.versions.get(version)
            failed = record is not None and record.fingerprint is not None and record.fingerprint == _fingerprint(path)
            if version in waiting or not failed:
                eligible.append(version)
        wanted = model.config.version_policy.select(eligible)
        with self._lock:
            served = bool(wanted) and all(
                (record := model.versions.get(version)) is not None and record.state == ModelState.AVAILABLE
                for version in wanted
            )
            cancel = [r for v, r in waiting.items() if v not in complete or (v not in wanted and served)]
            for record in cancel:
                record.state = ModelState.END
                record.retry_at = None
                record.error_code = Code.CANCELLED
                record.error_message = (
                    f"load retries cancelled, the version is no longer wanted: {record.error_message}"
                )
                record.fingerprint = _fingerprint(record.path)
                _log.info("model %s version %d: load retries cancelled", model.config.name, record.version)
        return bool(cancel)

    def _load(self, model: _Model, version: int, path: Path, *, failed_attempts: int = 0) -> bool:
        name = model.config.name
        record = _Version(version=version, path=path, state=ModelState.LOADING, failed_attempts=failed_attempts)
        with self._lock:
            model.versions[version] = record
        _log.info("loading model %s version %d from %s", name, version, path)
        started = time.perf_counter()
        try:
            try:
                servable = self._loader(name=name, version=version, path=path)
            except Exception:
                self._report_load(path, ok=False, started=started)
                raise
            self._report_load(path, ok=True, started=started)
            if self._enable_warmup:
                warmup_servable(servable, iterations=self._warmup_iterations)
        except Exception as error:
            message = str(error) or type(error).__name__
            attempts = record.failed_attempts + 1
            total = self._max_num_load_retries + 1
            with self._lock:
                record.failed_attempts = attempts
                if attempts < total:
                    # TF Serving's --max_num_load_retries: LOADING until the retries are spent;
                    # the versions already serving keep serving meanwhile.
                    record.retry_at = time.monotonic() + self._load_retry_interval
                    record.error_message = f"load attempt {attempts} of {total} failed, retrying in {self._load_retry_interval:g} s: {message}"
                else:
                    record.state = ModelState.END
                    record.retry_at = None
                    record.error_code = Code.UNKNOWN
                    record.error_message = message if total == 1 else f"{message} (after {total} load attempts)"
                    record.fingerprint = _fingerprint(path)
            if attempts < total:
                _log.warning("model %s version %d: %s", name, version, record.error_message)
            else:
                _log.warning("model %s version %d failed to load and is not served: %s", name, version, message)
            return False
        with self._lock:
            if model.versions.get(version) is record:
                record.servable = servable
                record.state = ModelState.AVAILABLE
        _log.info("model %s version %d is AVAILABLE", name, version)
        return True

    def _report_load(self, path: Path, *, ok: bool, started: float) -> None:
        if self._on_load is not None:
            self._on_load(path, ok, time.perf_counter() - started)

    def _unload(self, model: _Model, record: _Version) -> None:
        with self._lock:
            if record.state != ModelState.AVAILABLE:
                if record.state == ModelState.LOADING:
                    record.state = ModelState.END
                return
            record.state = ModelState.UNLOADING
            servable, record.servable = record.servable, None
        if servable is not None:
            servable.unload()
        with self._lock:
            record.state = ModelState.END
        _log.info("model %s version %d unloaded", model.config.name, record.version)

    def unload_all(self) -> None:
        with self._lock:
            models = list(self._models.values())
        for model in models:
            for record in list(model.versions.values()):
                self._unload(model, record)
        gc.unfreeze()  # the process goes on without a server: let ordinary collection resume

    # ----------------------------------------------------------------------- requests

    def _model(self, name: str, version: int | None) -> _Model:
        model = self._models.get(name)
        if model is None:
            served = ", ".join(sorted(self._models)) or "none"
            raise RequestError.not_found(
                f"Servable not found for request: {_describe(version, name)}; served models: {served}"
            )
        return model

    def _label_version(self, model: _Model, label: str) -> int:
        version = model.config.version_labels.get(label)
        if version is None:
            known = ", ".join(sorted(model.config.version_labels)) or "none"
            # INVALID_ARGUMENT, as in TF Serving: the label is part of the request, not a servable.
            raise RequestError.invalid(f"Unrecognized servable version label: {label}; labels: {known}")
        return version

    def resolve(self, name: str, *, version: int | None = None, label: str | None = None) -> Servable:
        """The servable that should answer a request, or a NOT_FOUND / UNAVAILABLE error."""
        with self._lock:
            model = self._model(name, version)
            if label is not None:
                version = self._label_version(model, label)
            if version is not None:
                record = model.versions.get(version)
                if record is None or record.state != ModelState.AVAILABLE or record.servable is None:
                    raise RequestError.not_found(f"Servable not found for request: {_describe(version, name)}")
                return record.servable
            available = [r for r in model.versions.values() if r.state == ModelState.AVAILABLE and r.servable]
            if not available:
                # NOT_FOUND with TF Serving's words (ServerCore::GetServableHandle): clients treat
                # 404 as "no such model yet"; the states are in the server's log and /v1/models/NAME.
                raise RequestError.not_found(f"Servable not found for request: {_describe(None, name)}")
            servable = max(available, key=lambda r: r.version).servable
            assert servable is not None
            return servable

    def status(self, name: str, *, version: int | None = None, label: str | None = None) -> list[VersionStatus]:
        with self._lock:
            model = self._models.get(name)
            if model is None:
                raise RequestError.not_found(f"Could not find any versions of model {name}")
            if label is not None:
                version = self._label_version(model, label)
            if version is not None:
                record = model.versions.get(version)
                if record is None:
                    raise RequestError.not_found(f"Could not find version {version} of model {name}")
                return [record.status()]
            if not model.versions:
                raise RequestError.not_found(f"Could not find any versions of model {name}")
            return [model.versions[v].status() for v in sorted(model.versions, reverse=True)]

    def all_status(self) -> dict[str, list[VersionStatus]]:
        with self._lock:
            return {
                name: [model.versions[v].status() for v in sorted(model.versions, reverse=True)]
                for name, model in sorted(self._models.items())
            }

    def labels(self, name: str) -> dict[str, int]:
        with self._lock:
            model = self._models.get(name)
            return dict(model.config.version_labels) if model else {}

    def policy(self, name: str) -> VersionPolicy | None:
        with self._lock:
            model = self._models.get(name)
            return model.config.version_policy if model else None

    def readiness(self) -> dict[str, bool]:
        """Whether each configured model has at least one AVAILABLE version."""
        with self._lock:
            return {
                name: any(r.state == ModelState.AVAILABLE for r in model.versions.values())
                for name, model in sorted(self._models.items())
            }
