"""bench_serve's h2load load generator against a live server: the bytes it sends are a valid gRPC
Predict call and a valid REST predict, its log is read into latencies and statuses, and gRPC
errors (HTTP 200 with a non-OK grpc-status) are counted from the server's metrics."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from conftest import half_plus_two_server_options
from tfpilot.serve import BatchingParameters, ModelServer

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_serve.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_serve_under_test", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    options = half_plus_two_server_options(
        tmp_path_factory.mktemp("models"), name="model", batching=BatchingParameters(max_batch_size=8)
    )
    with ModelServer(options) as running:
        yield running


def test_grpc_frame_is_the_length_prefixed_message(bench):
    assert bench.grpc_frame(b"abc") == b"\x00\x00\x00\x00\x03abc"
    assert bench.grpc_frame(b"x" * 300)[:5] == b"\x00\x00\x00\x01\x2c"


def test_log_lines_become_sorted_latencies_and_non_200_counts(bench):
    log = "1700000000000000\t200\t2500\n1700000000000100\t503\t1000\n1700000000000200\t200\t1500\n\n"
    latencies, not_ok = bench.h2load_latencies(log)
    assert latencies == [0.001, 0.0015, 0.0025]
    assert not_ok == 1


def test_commands_use_h1_connections_for_rest_and_streams_on_one_connection_for_grpc(bench, tmp_path):
    rest = bench.h2load_command(
        "h2load", "http://h/p", tmp_path / "d", tmp_path / "l", grpc=False, concurrency=64, seconds=1.2, warmup=0.3
    )
    assert rest[rest.index("-c") + 1] == "64" and rest[rest.index("-m") + 1] == "1" and "--h1" in rest
    assert rest[rest.index("-D") + 1] == "1200ms" and rest[rest.index("--warm-up-time") + 1] == "300ms"
    grpc = bench.h2load_command(
        "h2load", "http://h/p", tmp_path / "d", tmp_path / "l", grpc=True, concurrency=64, seconds=1.2, warmup=0.3
    )
    assert grpc[grpc.index("-c") + 1] == "1" and grpc[grpc.index("-m") + 1] == "64" and "--h1" not in grpc
    assert "content-type: application/grpc" in grpc and "te: trailers" in grpc


needs_h2load = pytest.mark.skipif(
    shutil.which("h2load") is None, reason="h2load not installed (apt-get install nghttp2-client)"
)


@needs_h2load
def test_h2load_drives_grpc_and_rest_and_bad_grpc_calls_count_as_errors(bench, server):
    endpoints = {"batched_rest": server.rest_url}
    payload = bench.predict_payload(1.0)
    bench.check_grpc_answer(server.grpc_target, payload)  # raises unless a PredictResponse with outputs
    url = f"http://{server.grpc_target}/tensorflow.serving.PredictionService/Predict"
    h2load = bench.h2load_path()

    before = bench.server_counts(endpoints, "batched", "grpc")
    result = bench.run_h2load(h2load, url, bench.grpc_frame(payload), grpc=True, concurrency=4, seconds=0.5, warmup=0.1)
    after = bench.server_counts(endpoints, "batched", "grpc")
    assert result["throughput"] > 0 and result["errors"] == 0 and result["generator_cpu"] >= 0
    assert after["requests"] > before["requests"] and after["errors"] == before["errors"]

    # A request for a model that does not exist: HTTP 200 to h2load, NOT_FOUND to the server.
    from tensorflow_serving.apis import predict_pb2

    wrong = predict_pb2.PredictRequest.FromString(payload)
    wrong.model_spec.name = "no_such_model"
    result = bench.run_h2load(
        h2load, url, bench.grpc_frame(wrong.SerializeToString()), grpc=True, concurrency=2, seconds=0.3, warmup=0.1
    )
    assert result["errors"] == 0  # what h2load alone sees
    assert bench.server_counts(endpoints, "batched", "grpc")["errors"] > after["errors"]

    rest = bench.run_h2load(
        h2load,
        f"{server.rest_url}/v1/models/model:predict",
        b'{"instances": [1.0]}',
        grpc=False,
        concurrency=2,
        seconds=0.3,
        warmup=0.1,
    )
    assert rest["throughput"] > 0 and rest["errors"] == 0
    missing = bench.run_h2load(
        h2load,
        f"{server.rest_url}/v1/models/no_such_model:predict",
        b'{"instances": [1.0]}',
        grpc=False,
        concurrency=1,
        seconds=0.3,
        warmup=0.1,
    )
    assert missing["errors"] > 0  # 404s counted from the log
