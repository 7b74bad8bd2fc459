"""Build .venv-next: the project's dependencies with tf-nightly and keras-nightly in place of the
pinned TensorFlow, Keras and TensorBoard (`make test-next` then runs the suite in it).

The dependency list is read from pyproject.toml, so the two environments never drift apart. The
pinned `tensorflow` is replaced, not added: tf-nightly and tensorflow install the same module.
tensorflow-serving-api is installed without its dependencies (it requires the `tensorflow`
wheel by name; its stubs need only protobuf and grpcio).

    python scripts/next_env.py [VENV]      # default .venv-next
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPLACED = {"tensorflow": "tf-nightly", "keras": "keras-nightly", "tensorboard": "tb-nightly"}
NO_DEPS = {"tensorflow-serving-api"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].strip().lower()


def main() -> int:
    venv = ROOT / (sys.argv[1] if len(sys.argv) > 1 else ".venv-next")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    plain = [r for r in requirements if _name(r) not in REPLACED and _name(r) not in NO_DEPS]
    unpinned = [r for r in requirements if _name(r) in NO_DEPS]
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)

    def pip(*args: str) -> None:
        print("pip install", " ".join(args), flush=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *args], check=True)

    pip("--upgrade", "pip")
    pip("--pre", *REPLACED.values())
    pip(*plain)
    pip("--no-deps", *unpinned)
    pip("--no-deps", "-e", str(ROOT))
    versions = subprocess.run(
        [
            str(python),
            "-c",
            "import tensorflow as tf, keras; print('TensorFlow', tf.__version__, '/ Keras', keras.__version__)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    print(versions.stdout.strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
