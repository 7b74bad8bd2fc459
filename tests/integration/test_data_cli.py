"""`tfpilot data inspect` and CSV data as people have it, end to end through the command line."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from conftest import run_tfpilot, wait_until_serving

pytestmark = pytest.mark.slow

TFPILOT = [sys.executable, "-m", "tfpilot.cli.main"]


def one_error_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def write_iris(path: Path) -> list[str]:
    """scikit-learn's iris under scikit-learn's own column names (`sepal length (cm)`, ...)."""
    from sklearn.datasets import load_iris

    iris = load_iris()
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow([*iris.feature_names, "species"])
        for row, target in zip(iris.data, iris.target, strict=True):
            writer.writerow([*map(float, row), iris.target_names[target]])
    return list(iris.feature_names)


def write_config(directory: Path, csv_name: str, *, label: str, extra: str = "") -> Path:
    config = directory / "run.yaml"
    config.write_text(
        f"name: tab\nruns_dir: runs\ndata:\n  kind: csv\n  path: {csv_name}\n  csv: {{label_column: {label}}}\n{extra}"
        "train: {epochs: 3, batch_size: 16}\nexport: {formats: [saved_model]}\n"
    )
    return config


def test_inspect_reports_bad_cells_as_one_line_and_json_for_good_data(tmp_path: Path) -> None:
    rows = [f"{i}.0,{i % 3},{'a' if i % 2 else 'b'}" for i in range(20)]
    rows[6] = "3.4cm,1,a"
    (tmp_path / "t.csv").write_text("size,count,label\n" + "\n".join(rows) + "\n")
    config = write_config(tmp_path, "t.csv", label="label")
    bad = run_tfpilot(["data", "inspect", config], cwd=tmp_path)
    assert bad.returncode == 2
    assert "`size`" in one_error_line(bad.stderr) and "line 8" in one_error_line(bad.stderr)
    assert "3.4cm" in bad.stdout  # the problems, listed one per row before the error
    skip = write_config(tmp_path, "t.csv", label="label", extra="  on_bad_records: skip\n")
    good = run_tfpilot(["data", "inspect", skip, "--format", "json"], cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    report = json.loads(good.stdout)
    assert sum(report["examples"].values()) == 19
    assert [f["evidence"]["lines"] for f in report["findings"] if f["code"] == "DATA-ROWS-SKIPPED"] == [[8]]


def test_train_prints_the_data_findings_of_the_run(tmp_path: Path) -> None:
    # `tfpilot train` printed "Findings: none" while findings.json held a skipped row.
    rows = [f"{i}.0,{i % 3},{'a' if i % 2 else 'b'}" for i in range(20)]
    rows[6] = "3.4cm,1,a"  # line 8: left out
    rows[9] = "9.0,NA,a"  # line 11: filled
    (tmp_path / "t.csv").write_text("size,count,label\n" + "\n".join(rows) + "\n")
    config = write_config(tmp_path, "t.csv", label="label", extra="  on_bad_records: skip\n")
    result = run_tfpilot(["train", config], cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "DATA-ROWS-SKIPPED" in result.stdout and "DATA-IMPUTED" in result.stdout
    assert "Findings: none" not in result.stdout


def test_folder_as_csv_path_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    config = write_config(tmp_path, "data", label="label")
    result = run_tfpilot(["data", "inspect", config], cwd=tmp_path)
    assert result.returncode == 2 and "is the folder" in one_error_line(result.stderr)


def start_server_lines(base_path: Path, name: str, cwd: Path) -> tuple[subprocess.Popen, list[str]]:
    """Start `tfpilot serve` on free ports; return it and its startup lines (which name the ports)."""
    process = subprocess.Popen(
        [
            *TFPILOT,
            "serve",
            "--port=0",
            "--rest_api_port=auto",
            f"--model_base_path={base_path}",
            f"--model_name={name}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    lines: list[str] = []
    while not any(line.startswith("serving") for line in lines):
        line = process.stdout.readline() if process.stdout else ""
        if not line:
            process.kill()
            raise AssertionError(f"server exited: {process.stderr.read() if process.stderr else ''}")
        lines.append(line.strip())
    return process, lines


def rest_url(lines: list[str]) -> str:
    match = re.search(r"REST  (http://127\.0\.0\.1:\d+)", "\n".join(lines))
    assert match, lines
    return match.group(1)


def start_server(base_path: Path, name: str, cwd: Path) -> tuple[subprocess.Popen, str]:
    process, lines = start_server_lines(base_path, name, cwd)
    return process, rest_url(lines)


def grpc_target(lines: list[str]) -> str:
    match = re.search(r"gRPC  (\S+)", "\n".join(lines))
    assert match, lines
    return match.group(1)


def grpc_predict(target: str, model: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """PredictionService.Predict with tensorflow-serving-api's own stub."""
    import grpc
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    for key, value in inputs.items():
        request.inputs[key].CopyFrom(tf.make_tensor_proto(value))
    with grpc.insecure_channel(target) as channel:
        reply = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=60)
    return {key: tf.make_ndarray(proto) for key, proto in reply.outputs.items()}


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_image_bytes_signature_answers_rest_b64_like_the_pixel_signature(tmp_path: Path) -> None:
    import base64

    import tensorflow as tf

    rng = np.random.default_rng(0)
    for label in ("left", "right"):
        for i in range(12):
            shape = [(20, 9, 3), (7, 31, 1), (12, 12, 4)][i % 3]
            pixels = rng.integers(0, 60, size=shape).astype(np.uint8)
            half = shape[1] // 2
            pixels[:, :half] += 180 if label == "left" else 0
            pixels[:, half:] += 180 if label == "right" else 0
            path = tmp_path / "images" / label / f"{i}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(tf.io.encode_png(pixels).numpy())
    config = tmp_path / "run.yaml"
    config.write_text(
        "name: img\nruns_dir: runs\ndata:\n  kind: image_folder\n  path: images\n"
        "  image: {height: 10, width: 10, channels: 3, resize: crop}\n"
        "train: {epochs: 2, batch_size: 8}\n"
        "export: {formats: [saved_model], signatures: [serving_default, image_bytes]}\n"
    )
    result = run_tfpilot(["run", config], cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    files = sorted((tmp_path / "images").rglob("*.png"))[:4]
    from tfpilot.config.schema import DataConfig
    from tfpilot.data import load_source

    source = load_source(
        DataConfig(
            kind="image_folder",
            path=tmp_path / "images",
            image={"height": 10, "width": 10, "channels": 3, "resize": "crop"},
        )
    )
    pixels = [source.decode({"path": tf.constant(str(f))})["image"].numpy().tolist() for f in files]
    # The warmup records warm the encoded-image path too, with a PNG a server can decode.
    from tfpilot.export.warmup import WARMUP_PATH, read_warmup_records

    (version,) = [p for p in (tmp_path / "runs" / "img" / "model").iterdir() if p.name.isdigit()]
    warmup = [r.predict_log.request for r in read_warmup_records(version / WARMUP_PATH) if r.HasField("predict_log")]
    image_requests = [r for r in warmup if r.model_spec.signature_name == "image_bytes"]
    assert len(image_requests) == 1
    png = tf.make_ndarray(image_requests[0].inputs["image_bytes"])[0]
    assert tf.io.decode_png(png).shape == (10, 10, 3)

    process, lines = start_server_lines(tmp_path / "runs" / "img" / "model", "img", tmp_path)
    rest = rest_url(lines)
    try:
        encoded = [{"b64": base64.b64encode(f.read_bytes()).decode()} for f in files]
        from_bytes = post(f"{rest}/v1/models/img:predict", {"signature_name": "image_bytes", "instances": encoded})
        from_pixels = post(f"{rest}/v1/models/img:predict", {"instances": [{"image": p} for p in pixels]})
        # The same files as a gRPC client sends them: a DT_STRING tensor of the encoded bytes.
        import grpc
        from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

        with grpc.insecure_channel(grpc_target(lines)) as channel:
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "img"
            request.model_spec.signature_name = "image_bytes"
            request.inputs["image_bytes"].CopyFrom(
                tf.make_tensor_proto([f.read_bytes() for f in files], dtype=tf.string)
            )
            response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=60)
        from_grpc = tf.make_ndarray(response.outputs["probabilities"])
    finally:
        process.terminate()
        process.wait(timeout=60)
    expected = [p["probabilities"] for p in from_pixels["predictions"]]
    np.testing.assert_allclose([p["probabilities"] for p in from_bytes["predictions"]], expected, atol=1e-5)
    np.testing.assert_allclose(from_grpc, expected, atol=1e-5)


def test_sklearn_column_names_train_export_and_serve(tmp_path: Path) -> None:
    names = write_iris(tmp_path / "iris.csv")
    config = write_config(tmp_path, "iris.csv", label="species")
    result = run_tfpilot(["run", config], cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    run = tmp_path / "runs" / "tab"
    report = json.loads((run / "data_report.json").read_text())
    assert report["columns"]["numeric"] == names
    assert sum(report["examples"].values()) == 150
    process = subprocess.Popen(
        [
            *TFPILOT,
            "serve",
            "--port=0",
            "--rest_api_port=auto",
            f"--model_base_path={run / 'model'}",
            "--model_name=iris",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        lines = wait_until_serving(process).splitlines()
        rest = rest_url(lines)
        rows = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]

        def post(verb: str, body: dict) -> dict:
            request = urllib.request.Request(
                f"{rest}/v1/models/iris:{verb}", data=json.dumps(body).encode(), method="POST"
            )
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())

        # :classify takes tf.Example features under the CSV header names exactly as written.
        classified = post(
            "classify", {"signature_name": "classify", "examples": [dict(zip(names, row, strict=True)) for row in rows]}
        )
        # :predict takes the names as written in the CSV header, or the signature's sanitised keys.
        predicted = post("predict", {"instances": [dict(zip(names, row, strict=True)) for row in rows]})
        keys = ["sepal_length_cm", "sepal_width_cm", "petal_length_cm", "petal_width_cm"]
        by_key = post("predict", {"instances": [dict(zip(keys, row, strict=True)) for row in rows]})
        assert by_key == predicted
        # :classify with the sanitised keys reaches the same features (never silently imputed)
        classified_by_key = post(
            "classify", {"signature_name": "classify", "examples": [dict(zip(keys, row, strict=True)) for row in rows]}
        )
        assert classified_by_key == classified
        columnar = post("predict", {"inputs": {name: [row[i] for row in rows] for i, name in enumerate(names)}})
        assert columnar["outputs"]["class_name"] == [p["class_name"] for p in predicted["predictions"]]
        # gRPC with the header names as written
        grpc_rows = np.array(rows, np.float32)
        grpc_outputs = grpc_predict(grpc_target(lines), "iris", {n: grpc_rows[:, i] for i, n in enumerate(names)})
    finally:
        process.terminate()
        process.wait(timeout=60)
    probabilities = np.array([p["probabilities"] for p in predicted["predictions"]])
    scores = np.array([[score for _, score in result] for result in classified["results"]])
    np.testing.assert_allclose(scores, probabilities, atol=1e-5)
    np.testing.assert_allclose(grpc_outputs["probabilities"], probabilities, atol=1e-5)
    assert [p["class_name"] for p in predicted["predictions"]] == [
        classified["results"][i][int(np.argmax(scores[i]))][0] for i in range(2)
    ]


def test_convert_writes_shards_that_a_config_trains_from(tmp_path: Path) -> None:
    write_iris(tmp_path / "iris.csv")
    config = write_config(tmp_path, "iris.csv", label="species")
    converted = run_tfpilot(["data", "convert", config, tmp_path / "shards", "--shards", "3"], cwd=tmp_path)
    assert converted.returncode == 0, converted.stderr
    section = json.loads((tmp_path / "shards" / "data_config.json").read_text())
    assert section["tfrecord"]["class_names"] == ["setosa", "versicolor", "virginica"]
    assert len(list((tmp_path / "shards").glob("*.tfrecord"))) == 3
    import yaml

    (tmp_path / "tf.yaml").write_text(
        yaml.safe_dump({"name": "tf", "runs_dir": "runs", "data": section, "train": {"epochs": 2, "batch_size": 16}})
    )
    inspected = run_tfpilot(["data", "inspect", tmp_path / "tf.yaml", "--format", "json"], cwd=tmp_path)
    assert inspected.returncode == 0, inspected.stderr
    report = json.loads(inspected.stdout)
    assert sum(report["examples"].values()) == 150 and report["kind"] == "tabular"
    trained = run_tfpilot(["train", tmp_path / "tf.yaml"], cwd=tmp_path, timeout=600)
    assert trained.returncode == 0, trained.stderr
    assert json.loads((tmp_path / "runs" / "tf" / "metrics.json").read_text())["train"]["examples"] > 0


def test_bench_reports_consistent_ratios_and_verdict(tmp_path: Path) -> None:
    write_iris(tmp_path / "iris.csv")
    config = write_config(tmp_path, "iris.csv", label="species")
    result = run_tfpilot(["data", "bench", config, "--format", "json"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    bench = json.loads(result.stdout)
    tuned, naive, step = (bench[k] for k in ("tuned_examples_per_s", "naive_examples_per_s", "step_examples_per_s"))
    assert min(tuned, naive, step) > 0
    assert bench["tuned_vs_naive"] == pytest.approx(tuned / naive)
    assert bench["pipeline_vs_step"] == pytest.approx(tuned / step)
    assert bench["input_bound"] == (tuned < step)
    assert [f["code"] for f in bench["findings"]] == (["DATA-INPUT-BOUND"] if bench["input_bound"] else [])
    text = run_tfpilot(["data", "bench", config], cwd=tmp_path)
    assert text.returncode == 0 and "verdict: " in text.stdout
