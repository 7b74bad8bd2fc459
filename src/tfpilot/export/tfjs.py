"""TF.js export in an isolated tool environment, verified in Node with @tensorflow/tfjs.

tensorflowjs 4.22 cannot be installed next to TensorFlow 2.21 (its tensorflow-decision-forests
dependency pins TF 2.19), so the converter lives in its own virtual environment, created on
first use under $TFPILOT_TOOLS_DIR (default ~/.cache/tfpilot/tools): `tfjs/venv` with
tensorflowjs 4.22 plus protobuf 6.31.1 (ydf's generated code refuses the protobuf 5 that pip
would otherwise resolve), and `tfjs/node` with the npm package @tensorflow/tfjs 4.22. The
converter reads the verified SavedModel (serving_default, preprocessing included); the output is
then loaded in Node and run on the test split so parity is measured like every other format.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from tfpilot.errors import ExportError

__all__ = ["TFJS_VERSION", "tools_dir", "ensure_tfjs_tools", "convert_tfjs", "run_tfjs"]

TFJS_VERSION = "4.22.0"
_PIP_PACKAGES = [f"tensorflowjs=={TFJS_VERSION}", "protobuf==6.31.1"]
_INSTALL_TIMEOUT_S = 1800

_VERIFY_JS = r"""
const tf = require('@tensorflow/tfjs');
const fs = require('fs'); const path = require('path');
async function main() {
  const [dir, inputPath, outputPath] = process.argv.slice(2);
  const request = JSON.parse(fs.readFileSync(inputPath));
  const modelJson = JSON.parse(fs.readFileSync(path.join(dir, 'model.json')));
  const weightSpecs = []; const chunks = [];
  for (const group of modelJson.weightsManifest) {
    weightSpecs.push(...group.weights);
    for (const p of group.paths) chunks.push(fs.readFileSync(path.join(dir, p)));
  }
  const weights = Buffer.concat(chunks);
  const model = await tf.loadGraphModel(tf.io.fromMemory({
    modelTopology: modelJson.modelTopology, weightSpecs,
    weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
    format: modelJson.format, signature: modelJson.signature}));
  const outputName = modelJson.signature.outputs[request.output].name.split(':')[0];
  const feeds = (start, end) => {
    const result = {};
    for (const [name, spec] of Object.entries(request.inputs)) {
      const per = spec.shape.slice(1).reduce((a, b) => a * b, 1);
      // tfjs has no uint8 dtype: integer inputs travel as int32 and the graph's Cast op does the rest.
      result[name] = tf.tensor(spec.values.slice(start * per, end * per), [end - start, ...spec.shape.slice(1)], spec.dtype);
    }
    return result;
  };
  const count = request.count;
  const out = model.execute(feeds(0, count), outputName);
  const values = Array.from(await out.data());
  const single = feeds(0, 1); const times = [];
  for (let i = 0; i < request.warmup + request.runs; i++) {
    const t0 = process.hrtime.bigint();
    const r = model.execute(single, outputName); await r.data(); r.dispose();
    if (i >= request.warmup) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  fs.writeFileSync(outputPath, JSON.stringify({shape: out.shape, values, latency_ms_p50: times[Math.floor(times.length / 2)]}));
}
main().catch(e => { console.error('tfjs verification failed: ' + e.message); process.exit(1); });
"""


def tools_dir() -> Path:
    return Path(os.environ.get("TFPILOT_TOOLS_DIR") or Path.home() / ".cache" / "tfpilot" / "tools")


def _run(command: list[str], *, what: str, cwd: Path | None = None, timeout: float = _INSTALL_TIMEOUT_S) -> str:
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise ExportError(
            f"tfjs: {what} needs `{command[0]}`, which is not installed; install Node.js 18+ (node and npm)"
        ) from None
    except subprocess.TimeoutExpired:
        raise ExportError(f"tfjs: {what} did not finish within {timeout:.0f}s") from None
    if done.returncode != 0:
        lines = [
            line
            for line in (done.stderr or done.stdout).strip().splitlines()
            if line.strip() and not line.startswith("WARNING: Location")
        ]
        raise ExportError(f"tfjs: {what} failed (exit {done.returncode}): {lines[-1] if lines else 'no output'}")
    return done.stdout


def ensure_tfjs_tools() -> tuple[Path, Path]:
    """(python of the converter venv, node project dir); created on first use, reused afterwards."""
    root = tools_dir() / "tfjs"
    venv = root / "venv"
    python = venv / "bin" / "python"
    if not (venv / ".complete").exists():
        shutil.rmtree(venv, ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        _run([sys.executable, "-m", "venv", str(venv)], what="creating the converter environment")
        _run([str(python), "-m", "pip", "install", "-q", *_PIP_PACKAGES], what=f"pip install {' '.join(_PIP_PACKAGES)}")
        (venv / ".complete").write_text(TFJS_VERSION + "\n")
    node = root / "node"
    if not (node / "node_modules" / "@tensorflow" / "tfjs" / "package.json").exists():
        node.mkdir(parents=True, exist_ok=True)
        (node / "package.json").write_text(json.dumps({"name": "tfpilot-tfjs-verify", "private": True}) + "\n")
        _run(
            ["npm", "install", "--no-audit", "--no-fund", f"@tensorflow/tfjs@{TFJS_VERSION}"],
            what="npm install @tensorflow/tfjs",
            cwd=node,
        )
    (node / "verify.js").write_text(_VERIFY_JS)
    return python, node


def convert_tfjs(saved_model_path: str | Path, output_dir: str | Path) -> Path:
    """Convert serving_default of a SavedModel version into a tfjs graph model (atomic directory)."""
    from tfpilot.atomic import atomic_directory

    python, _ = ensure_tfjs_tools()
    output_dir = Path(output_dir)
    if output_dir.exists():
        shutil.rmtree(output_dir)
    with atomic_directory(output_dir) as tmp:
        _run(
            [
                str(python),
                "-m",
                "tensorflowjs.converters.converter",
                "--input_format=tf_saved_model",
                "--signature_name=serving_default",
                "--saved_model_tags=serve",
                str(saved_model_path),
                str(tmp),
            ],
            what="tensorflowjs_converter",
            timeout=600,
        )
    return output_dir


def run_tfjs(
    model_dir: str | Path, features: dict[str, np.ndarray], *, output: str = "probabilities", runs: int = 100
) -> dict[str, Any]:
    """Run the tfjs model in Node on ``features``: {"probabilities": array, "latency_ms_p50": float}."""
    _, node = ensure_tfjs_tools()
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
        _run(
            ["node", "verify.js", str(Path(model_dir).resolve()), str(request_path), str(result_path)],
            what="running the model in Node",
            cwd=node,
            timeout=600,
        )
        result = json.loads(result_path.read_text())
    return {
        "probabilities": np.asarray(result["values"], np.float32).reshape(result["shape"]),
        "latency_ms_p50": float(result["latency_ms_p50"]),
    }
