"""TF.js export: convert with tensorflowjs 4.22 next to this environment's TensorFlow, verify in Node.

`pip install tensorflowjs==4.22.0` does not resolve next to TensorFlow 2.21: its
tensorflow-decision-forests dependency pins TensorFlow 2.19, and pip backtracks for a quarter of
an hour before giving up. The SavedModel -> graph-model conversion imports only three
distributions that tfpilot's environment lacks (tfjs_tools/requirements.txt names them and says
why), so the tools are, under $TFPILOT_TOOLS_DIR/tfjs (default ~/.cache/tfpilot/tools/tfjs):

- `site/`: those three wheels, hash-pinned, installed with --no-deps into a plain directory. The
  converter runs as a child process of this Python with `site` first on PYTHONPATH, so it uses
  the TensorFlow 2.21 already here (a `--system-site-packages` venv would not: made from inside a
  venv it sees the base interpreter's packages, not the venv's TensorFlow).
- `node/`: @tensorflow/tfjs 4.22 from a shipped package-lock.json (`npm ci`), which loads the
  converted model in Node and runs it on the test split, so parity is measured like every other
  format.

Installation happens once, under a lock, with a progress line per step (and a heartbeat while a
step runs) on the `tfpilot.export.tfjs` logger, everything else in `install.log`, and a bound on
the total time (TFPILOT_TFJS_INSTALL_TIMEOUT_S, default 600 s) after which it stops with one
line that names the log.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.errors import ExportError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; concurrent first exports are not guarded there
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "TFJS_VERSION",
    "TfjsTools",
    "tools_dir",
    "install_timeout_s",
    "ensure_tfjs_tools",
    "convert_tfjs",
    "run_tfjs",
]

TFJS_VERSION = "4.22.0"
ASSETS = Path(__file__).with_name("tfjs_tools")
_DEFAULT_INSTALL_TIMEOUT_S = 600.0
_RUN_TIMEOUT_S = 600.0
# A heartbeat line this often while a step runs, so a log shows the install is alive and how far.
_HEARTBEAT_S = 15.0
_NODE_MIN_MAJOR = 18
_NETWORK_HINT = "a slow network: raise TFPILOT_TFJS_INSTALL_TIMEOUT_S"

_log = logging.getLogger("tfpilot.export.tfjs")


@dataclass(frozen=True)
class TfjsTools:
    """Where the installed tools live: `site` goes on PYTHONPATH, `node` holds node_modules."""

    root: Path
    site: Path
    node: Path

    @property
    def install_log(self) -> Path:
        return self.root / "install.log"

    @property
    def convert_log(self) -> Path:
        return self.root / "convert.log"

    @property
    def node_log(self) -> Path:
        return self.root / "node.log"


def tools_dir() -> Path:
    return Path(os.environ.get("TFPILOT_TOOLS_DIR") or Path.home() / ".cache" / "tfpilot" / "tools")


def install_timeout_s() -> float:
    raw = os.environ.get("TFPILOT_TFJS_INSTALL_TIMEOUT_S", "")
    if not raw:
        return _DEFAULT_INSTALL_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise ExportError(f"TFPILOT_TFJS_INSTALL_TIMEOUT_S must be a number of seconds > 0, got `{raw}`")
    return value


def _digest(*paths: Path) -> str:
    sha = hashlib.sha256()
    for path in paths:
        sha.update(path.read_bytes())
    return sha.hexdigest()[:16]


def _stamp_matches(directory: Path, digest: str) -> bool:
    stamp = directory / ".tfpilot-installed"
    return stamp.exists() and stamp.read_text().strip() == digest


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    # Two exports (or two test workers) creating the tools at once would install over each other.
    with path.open("w") as handle:
        if fcntl is None:
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _last_line(log: Path, start: int) -> str:
    with log.open("rb") as handle:
        handle.seek(start)
        text = handle.read().decode(errors="replace")
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.startswith(("$ ", "WARNING: Location", "npm notice", "npm warn"))
    ]
    return lines[-1] if lines else "no output"


def _run_logged(
    command: list[str],
    *,
    what: str,
    log: Path,
    deadline: float,
    limit_s: float,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    how_far: Callable[[], str] | None = None,
    label: str | None = None,
    hint: str = "",
) -> None:
    """Run ``command`` with its output appended to ``log``; heartbeat lines; one-line errors."""
    with log.open("a") as out:
        out.write(f"\n$ {shlex.join(command)}\n")
        out.flush()
        start = out.tell()
        try:
            process = subprocess.Popen(
                command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        except FileNotFoundError:
            raise ExportError(
                f"tfjs: {what} needs `{command[0]}`, which is not installed; install Node.js {_NODE_MIN_MAJOR}+ (node and npm)"
            ) from None
        started = time.monotonic()
        try:
            while True:
                remaining = deadline - time.monotonic()
                try:
                    returncode = process.wait(timeout=max(0.05, min(_HEARTBEAT_S, remaining)))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() < deadline:
                        detail = how_far() if how_far else ""
                        _log.info(
                            f"{label or what}: {time.monotonic() - started:.0f}s so far{', ' + detail if detail else ''}"
                        )
                        continue
                    _kill(process)
                    out.write(f"\n[tfpilot] stopped after {limit_s:.0f}s\n")
                    raise ExportError(
                        f"tfjs: {what} did not finish within {limit_s:.0f}s; see {log}{' (' + hint + ')' if hint else ''}"
                    ) from None
        except BaseException:
            # Ctrl-C: the child runs in its own session (so the bound can kill npm's whole tree) and
            # would not receive the terminal's SIGINT; stop it here instead of leaving it behind.
            _kill(process)
            raise
    if returncode != 0:
        raise ExportError(f"tfjs: {what} failed (exit {returncode}): {_last_line(log, start)}; see {log}")


def _kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _check_node() -> None:
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        raise ExportError(
            f"tfjs: the parity check runs the model in Node, but `node`/`npm` is not installed; install Node.js {_NODE_MIN_MAJOR}+"
        )
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        major = 0
    if major < _NODE_MIN_MAJOR:
        raise ExportError(f"tfjs: Node.js {_NODE_MIN_MAJOR}+ is needed for @tensorflow/tfjs, got `{version}`")


def _installed_count(node_modules: Path) -> int:
    if not node_modules.is_dir():
        return 0
    count = 0
    for entry in node_modules.iterdir():
        if entry.name.startswith("@") and entry.is_dir():
            count += sum(1 for _ in entry.iterdir())
        elif not entry.name.startswith("."):
            count += 1
    return count


def ensure_tfjs_tools() -> TfjsTools:
    """The converter's site directory and the Node project, installed on first use, reused afterwards."""
    root = tools_dir() / "tfjs"
    tools = TfjsTools(root=root, site=root / "site", node=root / "node")
    requirements = ASSETS / "requirements.txt"
    package_json, package_lock = ASSETS / "package.json", ASSETS / "package-lock.json"
    site_digest = _digest(requirements) + f"-py{sys.version_info.major}.{sys.version_info.minor}"
    node_digest = _digest(package_json, package_lock)
    if _stamp_matches(tools.site, site_digest) and _stamp_matches(tools.node, node_digest):
        _copy_verify_script(tools)
        return tools

    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / ".lock"):
        need_site = not _stamp_matches(tools.site, site_digest)
        need_node = not _stamp_matches(tools.node, node_digest)
        if need_site or need_node:
            _install(tools, need_site=need_site, need_node=need_node, site_digest=site_digest, node_digest=node_digest)
    _copy_verify_script(tools)
    return tools


def _install(tools: TfjsTools, *, need_site: bool, need_node: bool, site_digest: str, node_digest: str) -> None:
    limit_s = install_timeout_s()
    deadline = time.monotonic() + limit_s
    began = time.monotonic()
    log = tools.install_log
    log.write_text(f"tfpilot: installing the TF.js tools into {tools.root}\n")
    steps = int(need_site) + int(need_node)
    step = 0
    _log.info(
        f"tfjs: first use, installing the converter and @tensorflow/tfjs {TFJS_VERSION} into {tools.root} "
        f"(at most {limit_s:.0f}s; log: {log})"
    )
    legacy = tools.root / "venv"
    if legacy.is_dir():
        # Where tfpilot used to pip-install tensorflowjs with all its dependencies (a second TensorFlow, ~3 GB).
        _log.info(f"tfjs: removing the previous converter environment {legacy}")
        shutil.rmtree(legacy, ignore_errors=True)
    if need_node:
        # Fail before downloading anything when the parity check could not run anyway.
        _check_node()
    if need_site:
        step += 1
        names = [
            line.split()[0]
            for line in (ASSETS / "requirements.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        _log.info(
            f"tfjs [{step}/{steps}] pip: {', '.join(names)} (hash-pinned, no dependencies: "
            "TensorFlow is this environment's)"
        )
        step_began = time.monotonic()
        partial = tools.root / "site.partial"
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(tools.site, ignore_errors=True)
        _check_pip()
        _run_logged(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--no-deps",
                "--only-binary=:all:",
                "--require-hashes",
                "--no-cache-dir",
                "--disable-pip-version-check",
                "--no-input",
                "--progress-bar=off",
                "--target",
                str(partial),
                "-r",
                str(ASSETS / "requirements.txt"),
            ],
            what="pip install (the converter)",
            label=f"tfjs [{step}/{steps}] pip",
            hint=_NETWORK_HINT,
            log=log,
            deadline=deadline,
            limit_s=limit_s,
        )
        (partial / ".tfpilot-installed").write_text(site_digest + "\n")
        partial.rename(tools.site)
        _log.info(f"tfjs [{step}/{steps}] pip: done in {time.monotonic() - step_began:.0f}s")
    if need_node:
        step += 1
        expected = sum(
            1
            for key in json.loads((ASSETS / "package-lock.json").read_text())["packages"]
            if key.startswith("node_modules/")
        )
        _log.info(f"tfjs [{step}/{steps}] npm ci: @tensorflow/tfjs {TFJS_VERSION} ({expected} locked packages)")
        step_began = time.monotonic()
        shutil.rmtree(tools.node, ignore_errors=True)
        tools.node.mkdir(parents=True)
        shutil.copy(ASSETS / "package.json", tools.node / "package.json")
        shutil.copy(ASSETS / "package-lock.json", tools.node / "package-lock.json")
        node_modules = tools.node / "node_modules"
        _run_logged(
            [
                "npm",
                "ci",
                "--no-audit",
                "--no-fund",
                # core-js' postinstall only prints a banner; nothing tfjs needs runs at install time.
                "--ignore-scripts",
                "--cache",
                str(tools.root / "npm-cache"),
            ],
            what="npm ci (@tensorflow/tfjs)",
            label=f"tfjs [{step}/{steps}] npm ci",
            hint=_NETWORK_HINT,
            log=log,
            deadline=deadline,
            limit_s=limit_s,
            cwd=tools.node,
            how_far=lambda: f"{min(_installed_count(node_modules), expected)}/{expected} packages",
        )
        (tools.node / ".tfpilot-installed").write_text(node_digest + "\n")
        # The downloaded tarballs (about 70 MB) are only needed again if the lock file changes.
        shutil.rmtree(tools.root / "npm-cache", ignore_errors=True)
        _log.info(f"tfjs [{step}/{steps}] npm ci: done in {time.monotonic() - step_began:.0f}s")
    _log.info(f"tfjs: tools ready in {time.monotonic() - began:.0f}s")


def _check_pip() -> None:
    import importlib.util

    if importlib.util.find_spec("pip") is None:
        raise ExportError(
            f"tfjs: installing the converter needs pip in this Python ({sys.executable}), which has none; "
            f"run `{sys.executable} -m ensurepip`"
        )


def _copy_verify_script(tools: TfjsTools) -> None:
    source = (ASSETS / "verify.js").read_text()
    target = tools.node / "verify.js"
    if not target.exists() or target.read_text() != source:
        target.write_text(source)


def _converter_env(tools: TfjsTools) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tools.site), env.get("PYTHONPATH", "")) if p)
    # The converter's TensorFlow start-up lines go to convert.log, not the user's terminal.
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def convert_tfjs(
    saved_model_path: str | Path, output_dir: str | Path, *, imports_report: str | Path | None = None
) -> Path:
    """Convert serving_default of a SavedModel version into a tfjs graph model (atomic directory).

    ``imports_report``: a JSON file the converter writes with every top-level module it imported
    and whether it came from the tools' site directory, this environment, or a stand-in.
    """
    from tfpilot.atomic import atomic_directory

    tools = ensure_tfjs_tools()
    output_dir = Path(output_dir)
    if output_dir.exists():
        shutil.rmtree(output_dir)
    command = [sys.executable, str(ASSETS / "convert.py"), str(tools.site), str(Path(saved_model_path).resolve())]
    _log.info(f"tfjs: converting {saved_model_path} (serving_default) with tensorflowjs {TFJS_VERSION}")
    began = time.monotonic()
    tools.convert_log.write_text("")
    with atomic_directory(output_dir) as tmp:
        extra = ["--imports-report", str(Path(imports_report).resolve())] if imports_report else []
        _run_logged(
            [*command, str(tmp), *extra],
            what="tensorflowjs converter",
            log=tools.convert_log,
            deadline=time.monotonic() + _RUN_TIMEOUT_S,
            limit_s=_RUN_TIMEOUT_S,
            env=_converter_env(tools),
        )
    _log.info(f"tfjs: converted in {time.monotonic() - began:.0f}s -> {output_dir}")
    return output_dir


def run_tfjs(
    model_dir: str | Path, features: dict[str, np.ndarray], *, output: str = "probabilities", runs: int = 100
) -> dict[str, Any]:
    """Run the tfjs model in Node on ``features``: {"probabilities": array, "latency_ms_p50": float}."""
    tools = ensure_tfjs_tools()
    count = len(next(iter(features.values())))
    request = {
        "output": output,
        "count": count,
        "warmup": 10,
        "runs": runs,
        "inputs": {
            name: {
                "shape": list(value.shape),
                "dtype": "int32" if value.dtype.kind in "iub" else "string" if value.dtype.kind in "USO" else "float32",
                "values": [v.decode() if isinstance(v, bytes) else v for v in value.reshape(-1).tolist()],
            }
            for name, value in features.items()
        },
    }
    with tempfile.TemporaryDirectory(prefix="tfpilot-tfjs-") as tmp:
        request_path, result_path = Path(tmp) / "in.json", Path(tmp) / "out.json"
        request_path.write_text(json.dumps(request))
        tools.node_log.write_text("")
        _run_logged(
            ["node", "verify.js", str(Path(model_dir).resolve()), str(request_path), str(result_path)],
            what="running the model in Node",
            log=tools.node_log,
            deadline=time.monotonic() + _RUN_TIMEOUT_S,
            limit_s=_RUN_TIMEOUT_S,
            cwd=tools.node,
        )
        result = json.loads(result_path.read_text())
    return {
        "probabilities": np.asarray(result["values"], np.float32).reshape(result["shape"]),
        "latency_ms_p50": float(result["latency_ms_p50"]),
    }
