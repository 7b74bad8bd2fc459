"""Does `tfpilot.fit` go through on models nobody here wrote? The driver of the held-out rounds.

A case folder (outside this repository: the models are other people's code, rewritten as cases
by a helper who never read tfpilot) holds one module per model, each defining

    build_model()          -> a compiled keras.Model (seeded inside)
    fit_kwargs(poison)     -> model.fit's keyword arguments; poison=True plants one NaN in a float
                              input of one early training example (None: the model has none)
    predict_inputs()       -> a few rows for model.predict (None: nothing to serve)

For each case, every run in a fresh process with the case folder on PYTHONPATH (as a user's
project is), from the same seeds and so the same initial weights:

1. ``keras``: model.fit; ``control``: model.fit again (is the case deterministic at all?);
2. ``tfpilot``: tfpilot.fit with the same arguments, then model.predict on the trained model;
3. ``nan``: tfpilot.fit with the poisoned data and ``nan_policy="skip_batch"``: how many of the
   model's variables are not finite afterwards; ``keras_nan``: plain model.fit on the same data;
4. ``tfpilot export RUN`` and ``tfpilot serve`` on the exported model, answering REST rows
   (``instances``), REST columns (``inputs``) and gRPC Predict (tensorflow-serving-api's stubs),
   compared with the trained model's own model.predict at atol 1e-4 (outputs that differ between
   two model.predict calls sample: their shape is compared instead).

Prints one line per case and writes OUT/CASE/result.json. Wall is tfpilot.fit over the faster of
the two model.fit runs, one run each: on a shared 2-core machine read it as +-50%.

    python benchmarks/fit_cases.py CASEDIR CASE [CASE ...] --out OUT
    PYTHONPATH=/path/to/worktree/src python benchmarks/fit_cases.py ...   # another commit's tfpilot
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import pickle
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

ATOL = 1e-4


def _natural(key: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", key)]


def _tree_arrays(value: Any) -> Any:
    """model.predict's result or inputs as plain NumPy (dicts and lists kept)."""
    if isinstance(value, dict):
        return {str(k): _tree_arrays(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_tree_arrays(v) for v in value]
    return np.asarray(value)


def _history(history: Any) -> dict[str, list[float]]:
    return {key: [float(v) for v in values] for key, values in history.history.items()}


def _nonfinite(model: Any) -> tuple[int, int]:
    bad = 0
    for variable in model.variables:
        value = np.asarray(variable.numpy() if hasattr(variable, "numpy") else variable)
        if value.dtype.kind in "fc" and not np.all(np.isfinite(value)):
            bad += 1
    return bad, len(model.variables)


def _save(path: Path, payload: dict[str, Any]) -> None:
    path.write_text(json.dumps(payload, indent=1, default=str))


def run_one(mode: str, casedir: Path, case: str, work: Path) -> None:
    """One run in this process (the parent starts each in a fresh one)."""
    sys.path.insert(0, str(casedir))
    module = importlib.import_module(case)
    out = work / f"{mode}.json"
    poison = mode in {"nan", "keras_nan"}
    model = module.build_model()
    kwargs = module.fit_kwargs(poison)
    if kwargs is None:
        _save(out, {"status": "n/a", "why": "no float input to poison"})
        return
    kwargs = dict(kwargs)
    kwargs.setdefault("verbose", 0)
    started = time.perf_counter()
    if mode in {"keras", "control", "keras_nan"}:
        history = model.fit(**kwargs)
    else:
        import tfpilot

        options: dict[str, Any] = {"name": case, "runs_dir": str(work / "runs" / mode)}
        if mode == "nan":
            options["nan_policy"] = "skip_batch"
        history = tfpilot.fit(model, **kwargs, **options).keras_history
    seconds = time.perf_counter() - started
    payload: dict[str, Any] = {"status": "ok", "history": _history(history), "seconds": seconds}
    if poison:
        payload["nonfinite"], payload["variables"] = _nonfinite(model)
    if mode == "tfpilot":
        inputs = module.predict_inputs()
        if inputs is not None:
            first = _tree_arrays(model.predict(inputs, verbose=0))
            second = _tree_arrays(model.predict(inputs, verbose=0))
            # pickle: the driver's own arrays, read back by the driver only (np.array would stack them)
            (work / "predict.pkl").write_bytes(pickle.dumps((first, second, _tree_arrays(inputs))))
            payload["output_names"] = list(getattr(model, "output_names", []) or [])
            payload["input_names"] = [getattr(t, "name", "") for t in (getattr(model, "inputs", None) or [])]
    _save(out, payload)


def _child(mode: str, casedir: Path, case: str, work: Path, timeout: float) -> dict[str, Any]:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONHASHSEED": "0"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(casedir), env.get("PYTHONPATH", "")) if p)
    cwd = work / f"cwd-{mode}"
    cwd.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "_one", mode, str(casedir), case, str(work)]
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "timeout"}
    (work / f"{mode}.log").write_text(done.stdout + done.stderr)
    path = work / f"{mode}.json"
    if done.returncode != 0 or not path.exists():
        tail = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:] or ["(no output)"]
        return {"status": "failed", "why": tail[0][:400]}
    return json.loads(path.read_text())


def _history_diff(a: dict[str, list[float]], b: dict[str, list[float]]) -> str:
    if set(a) != set(b):
        return f"keys differ: {sorted(set(a) ^ set(b))}"
    worst = 0.0
    for key in a:
        if len(a[key]) != len(b[key]):
            return f"{key}: {len(a[key])} vs {len(b[key])} epochs"
        for x, y in zip(a[key], b[key], strict=True):
            if math.isnan(x) and math.isnan(y):
                continue
            worst = max(worst, abs(x - y))
    return "equal" if worst == 0.0 else f"max diff {worst:.3g}"


def _signature(base: str, name: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/v1/models/{name}/metadata", timeout=60) as response:
        metadata = json.loads(response.read().decode())
    return metadata["metadata"]["signature_def"]["signature_def"]["serving_default"]


def _keyed_inputs(inputs: Any, signature: dict[str, Any], input_names: list[str]) -> dict[str, np.ndarray]:
    """The case's predict inputs under the signature's keys (a keyword name is served as name_)."""
    keys = sorted(signature["inputs"], key=_natural)

    from tfpilot.data.names import signature_key  # `class` -> `class_`, as the export named it

    def key_for(name: str) -> str:
        for candidate in (name, signature_key(name)):
            if candidate in signature["inputs"]:
                return candidate
        raise KeyError(f"input {name!r} not in the signature's {keys}")

    if isinstance(inputs, dict):
        keyed = {key_for(k): np.asarray(v) for k, v in inputs.items()}
    elif isinstance(inputs, list):
        names = (
            input_names
            if len(input_names) == len(inputs) and all(n in signature["inputs"] for n in input_names)
            else keys
        )
        keyed = {k: np.asarray(v) for k, v in zip(names, inputs, strict=True)}
    else:
        (only,) = keys
        keyed = {only: np.asarray(inputs)}
    for key, value in keyed.items():
        dims = signature["inputs"][key].get("tensor_shape", {}).get("dim", [])
        if len(dims) == value.ndim + 1 and dims and dims[-1].get("size") == "1":
            keyed[key] = value = value.reshape(*value.shape, 1)
        # a gRPC client sends the signature's dtype (TF Serving refuses another); JSON has none
        if value.dtype.kind in "biuf":
            keyed[key] = value.astype(_numpy_dtype(signature["inputs"][key]["dtype"]))
    return keyed


def _numpy_dtype(name: str) -> Any:
    """`DT_FLOAT` -> numpy.float32, by TensorFlow's own table."""
    import tensorflow as tf
    from tensorflow.core.framework import types_pb2

    return tf.dtypes.as_dtype(types_pb2.DataType.Value(name)).as_numpy_dtype


def _expected_outputs(first: Any, signature: dict[str, Any], output_names: list[str]) -> dict[str, np.ndarray]:
    keys = sorted(signature["outputs"], key=_natural)
    if isinstance(first, dict):
        return {k: np.asarray(v) for k, v in first.items()}
    if isinstance(first, list):
        names = output_names if len(output_names) == len(first) and set(output_names) <= set(keys) else keys
        return {k: np.asarray(v) for k, v in zip(names, first, strict=True)}
    (only,) = keys
    return {only: np.asarray(first)}


def _json_value(value: np.ndarray) -> Any:
    if value.dtype.kind in "SO":
        return (
            [v.decode() if isinstance(v, bytes) else v for v in value.reshape(-1)]
            if value.ndim <= 1
            else value.astype(str).tolist()
        )
    return value.tolist()


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read().decode())
    except urllib.error.HTTPError as error:
        return {"error": error.read().decode()[:300]}


def _compare(served: dict[str, np.ndarray], expected: dict[str, np.ndarray], sampled: set[str]) -> str:
    worst = 0.0
    for key, value in expected.items():
        if key not in served:
            return f"output {key} missing (served {sorted(served)})"
        got = np.asarray(served[key])
        if got.shape != value.shape:
            return f"{key}: shape {got.shape} vs {value.shape}"
        if key in sampled or value.dtype.kind not in "fiub":
            continue
        worst = max(worst, float(np.max(np.abs(got.astype("float64") - value.astype("float64")), initial=0.0)))
    return f"ok {worst:.2g}" if worst <= ATOL else f"differs {worst:.3g}"


def _serve_check(casedir: Path, case: str, work: Path, tfpilot_run: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(casedir), env.get("PYTHONPATH", "")) if p)
    run = work / "runs" / "tfpilot" / case
    cwd = work / "cwd-tfpilot"
    exported = subprocess.run(
        [sys.executable, "-m", "tfpilot.cli.main", "export", str(run)], cwd=cwd, env=env, capture_output=True, text=True
    )
    (work / "export.log").write_text(exported.stdout + exported.stderr)
    if exported.returncode != 0:
        return {"export": "failed", "why": (exported.stderr.strip().splitlines() or ["?"])[-1][:400]}
    result: dict[str, Any] = {"export": "ok", "message": exported.stdout.strip().splitlines()[-1:]}
    predicted = work / "predict.pkl"
    if not predicted.exists():
        result["serve"] = "n/a (no predict inputs)"
        return result
    first, second, inputs = pickle.loads(predicted.read_bytes())
    server = subprocess.Popen(
        [sys.executable, "-m", "tfpilot.cli.main", "serve", f"--model_base_path={run / 'model'}", f"--model_name={case}",
         "--rest_api_port=auto", "--port=0"],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        lines: list[str] = []
        while not any(line.startswith("serving") for line in lines):
            line = server.stdout.readline() if server.stdout else ""
            if not line:
                return {**result, "serve": "failed", "why": (server.stderr.read() if server.stderr else "")[-400:]}
            lines.append(line.strip())
        text = "\n".join(lines)
        rest = re.search(r"REST  (http://127\.0\.0\.1:\d+)", text)
        grpc_target = re.search(r"gRPC  (127\.0\.0\.1:\d+)", text)
        assert rest and grpc_target, text
        base = rest[1]
        signature = _signature(base, case)
        keyed = _keyed_inputs(inputs, signature, tfpilot_run.get("input_names", []))
        expected = _expected_outputs(first, signature, tfpilot_run.get("output_names", []))
        again = _expected_outputs(second, signature, tfpilot_run.get("output_names", []))
        sampled = {
            k for k in expected if expected[k].shape != again[k].shape or not np.array_equal(expected[k], again[k])
        }
        result["sampled"] = sorted(sampled)
        rows = len(next(iter(keyed.values())))
        same_rows = all(len(v) == rows for v in keyed.values())
        # REST rows: one instance per row (only where every input has the same row count)
        if same_rows:
            instances = [{k: _json_value(v[i : i + 1])[0] for k, v in keyed.items()} for i in range(rows)]
            answer = _post(f"{base}/v1/models/{case}:predict", {"instances": instances})
            if "predictions" in answer:
                predictions = answer["predictions"]
                if isinstance(predictions[0], dict):
                    served = {k: np.array([p[k] for p in predictions]) for k in predictions[0]}
                else:
                    served = {next(iter(expected)): np.array(predictions)}
                result["rest_rows"] = _compare(served, expected, sampled)
            else:
                result["rest_rows"] = f"error {answer.get('error', answer)}"
        else:
            result["rest_rows"] = "n/a (inputs of different row counts)"
        answer = _post(f"{base}/v1/models/{case}:predict", {"inputs": {k: _json_value(v) for k, v in keyed.items()}})
        if "outputs" in answer:
            outputs = answer["outputs"]
            served = (
                {k: np.array(v) for k, v in outputs.items()}
                if isinstance(outputs, dict)
                else {next(iter(expected)): np.array(outputs)}
            )
            result["rest_columns"] = _compare(served, expected, sampled)
        else:
            result["rest_columns"] = f"error {answer.get('error', answer)}"
        result["grpc"] = _grpc(grpc_target[1], case, keyed, expected, sampled)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    return result


def _grpc(
    target: str, case: str, keyed: dict[str, np.ndarray], expected: dict[str, np.ndarray], sampled: set[str]
) -> str:
    import grpc
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    request = predict_pb2.PredictRequest()
    request.model_spec.name = case
    for key, value in keyed.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    with grpc.insecure_channel(target) as channel:
        try:
            response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=120)
        except grpc.RpcError as error:
            return f"error {error.code().name}: {error.details()[:200]}"
    served = {k: tf.make_ndarray(v) for k, v in response.outputs.items()}
    return _compare(served, expected, sampled)


def run_case(casedir: Path, case: str, out: Path, timeout: float) -> dict[str, Any]:
    work = out / case
    work.mkdir(parents=True, exist_ok=True)
    runs = {
        mode: _child(mode, casedir, case, work, timeout) for mode in ("keras", "control", "tfpilot", "nan", "keras_nan")
    }
    result: dict[str, Any] = {"case": case, "runs": runs}
    keras_run, control, ours = runs["keras"], runs["control"], runs["tfpilot"]
    if keras_run.get("status") == "ok" and control.get("status") == "ok":
        result["fit_vs_fit"] = _history_diff(keras_run["history"], control["history"])
    if ours.get("status") == "ok" and keras_run.get("status") == "ok":
        result["history"] = _history_diff(keras_run["history"], ours["history"])
        fastest = min(keras_run["seconds"], control.get("seconds", math.inf))
        result["wall"] = round(ours["seconds"] / fastest, 2)
        result["serve"] = _serve_check(casedir, case, work, ours)
    else:
        result["history"] = f"tfpilot.fit {ours.get('status')}: {ours.get('why', '')}"
    nan = runs["nan"]
    result["nan"] = (
        f"{nan['nonfinite']}/{nan['variables']} non-finite"
        if nan.get("status") == "ok"
        else f"{nan.get('status')}: {nan.get('why', '')}"
    )
    plain = runs["keras_nan"]
    if plain.get("status") == "ok":
        result["nan_plain_fit"] = f"{plain['nonfinite']}/{plain['variables']} non-finite"
    for mode in runs.values():
        mode.pop("history", None)
    (work / "result.json").write_text(json.dumps(result, indent=1))
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_one":
        run_one(argv[1], Path(argv[2]), argv[3], Path(argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("casedir", type=Path)
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    args = parser.parse_args(argv)
    for case in args.cases:
        result = run_case(args.casedir.resolve(), case, args.out.resolve(), args.timeout)
        serve = result.get("serve", {})
        print(
            f"{case}: history {result['history']} (fit vs fit: {result.get('fit_vs_fit', '?')}); nan {result['nan']}"
            f" (plain fit: {result.get('nan_plain_fit', '?')}); export {serve.get('export', '-')} {serve.get('why', '')}"
            f" rows {serve.get('rest_rows', '-')} columns {serve.get('rest_columns', '-')} grpc {serve.get('grpc', '-')}"
            f"; wall {result.get('wall', '-')}x",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
