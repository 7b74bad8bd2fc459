"""Hot reload under concurrent load, corrupt versions, the request log, and fuzzed requests."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfpilot.serve import BatchingParameters, ModelServer, ServedModel, ServerOptions, demo_models, read_requests


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """half_plus_two versions whose offset is version + 1, so f(2) = version + 2."""
    root = tmp_path_factory.mktemp("built")
    for version in (1, 2, 4):
        demo_models.write_half_plus_two(root / "half", version, offset=version + 1.0)
    demo_models.write_corrupt_version(root / "corrupt", 3)
    demo_models.write_multi_io_model(root / "multi", 1)
    demo_models.write_string_model(root / "strings", 1)
    demo_models.write_classifier_model(root / "classifier", 1)
    return root


def publish(source: Path, base: Path, version: int) -> None:
    """Copy a version in the way export tools should: hidden temp dir, then one rename."""
    staging = base / f".{version}.staging"
    shutil.copytree(source, staging)
    os.replace(staging, base / str(version))


def test_hot_swap_under_load_has_zero_failures_and_never_serves_a_corrupt_version(tmp_path, built):
    import aiohttp

    base = tmp_path / "half"
    base.mkdir()
    publish(built / "half" / "1", base, 1)
    log_path = tmp_path / "requests.sqlite"
    options = ServerOptions(
        models=[ServedModel(name="half", base_path=base)],
        rest_port=0,
        grpc_port=None,
        batching=BatchingParameters(max_batch_size=32),
        file_system_poll_wait_seconds=0.1,
        request_log_path=log_path,
        load_retry_interval_micros=-1,  # TF Serving's 5 retries, without the minute between them
    )
    answers: list[tuple[int, object]] = []

    async def status(session, url):
        async with session.get(url) as response:
            return await response.json()

    async def wait_for(predicate, timeout=60.0):
        deadline = asyncio.get_running_loop().time() + timeout
        while not predicate():
            assert asyncio.get_running_loop().time() < deadline, "timed out waiting for the swap"
            await asyncio.sleep(0.05)

    async def main(server: ModelServer) -> None:
        url = f"{server.rest_url}/v1/models/half"
        stop = asyncio.Event()
        async with aiohttp.ClientSession() as session:

            async def client() -> None:
                while not stop.is_set():
                    async with session.post(url + ":predict", json={"instances": [2.0]}) as response:
                        body = await response.json()
                        answers.append((response.status, body.get("predictions", body)))

            clients = [asyncio.ensure_future(client()) for _ in range(16)]
            await wait_for(lambda: len(answers) > 50)
            await asyncio.to_thread(publish, built / "half" / "2", base, 2)
            await wait_for(lambda: answers[-1][1] == [4.0])
            await asyncio.to_thread(publish, built / "corrupt" / "3", base, 3)
            (base / "5").mkdir()
            (base / "5" / "saved_model.pb").write_bytes(b"half written")  # no variables/ yet
            broken = {}
            while broken.get("state") != "END":
                versions = (await status(session, url))["model_version_status"]
                broken = next((v for v in versions if v["version"] == "3"), {})
                await asyncio.sleep(0.05)
            assert broken["status"]["error_code"] == "UNKNOWN"
            assert broken["status"]["error_message"].endswith("(after 6 load attempts)")
            served_after_corrupt = len(answers)
            await wait_for(lambda: len(answers) > served_after_corrupt + 50)
            await asyncio.to_thread(publish, built / "half" / "4", base, 4)
            await wait_for(lambda: answers[-1][1] == [6.0])
            final = (await status(session, url))["model_version_status"]
            stop.set()
            await asyncio.gather(*clients)
        states = {v["version"]: v["state"] for v in final}
        assert states == {"4": "AVAILABLE", "3": "END", "2": "END", "1": "END"}, final

    with ModelServer(options) as server:
        asyncio.run(main(server))
        server.request_log.flush()
    failures = [answer for answer in answers if answer[0] != 200]
    assert not failures, failures[:5]
    values = [answer[1][0] for answer in answers]
    assert set(values) == {3.0, 4.0, 6.0}  # v1, v2, v4; the corrupt v3 never answered
    switch_to_two = values.index(4.0)
    assert 3.0 not in values[switch_to_two + 64 :]  # after the swap (16 in flight), never back to v1
    logged = read_requests(log_path, model="half")
    assert len(logged) > 100
    for entry in logged:
        assert entry.signature == "serving_default" and entry.inputs == {"x": [2.0]}
        assert entry.outputs == {"y": [entry.version + 2.0]}  # logged with the version that answered
    assert {entry.version for entry in logged} == {1, 2, 4}


def test_request_log_stores_classify_examples_as_feature_columns(tmp_path, built):
    log_path = tmp_path / "log.sqlite"
    options = ServerOptions(
        models=[ServedModel(name="classifier", base_path=built / "classifier")],
        rest_port=0,
        grpc_port=None,
        file_system_poll_wait_seconds=0,
        request_log_path=log_path,
    )
    with ModelServer(options) as server:
        body = json.dumps({"context": {"country": "fr"}, "examples": [{"x": 1.0}, {"x": -2.0}]}).encode()
        request = urllib.request.Request(f"{server.rest_url}/v1/models/classifier:classify", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200
        server.request_log.flush()
    (entry,) = read_requests(log_path)
    assert entry.inputs == {"x": [[1.0], [-2.0]], "country": [["ZnI="], ["ZnI="]]}
    assert entry.outputs["classes"] == [["bmVn", "cG9z"], ["bmVn", "cG9z"]]
    assert len(entry.outputs["scores"]) == 2


@pytest.fixture(scope="module")
def fuzz_server(built):
    options = ServerOptions(
        models=[
            ServedModel(name="half", base_path=built / "half"),
            ServedModel(name="multi", base_path=built / "multi"),
            ServedModel(name="strings", base_path=built / "strings"),
            ServedModel(name="classifier", base_path=built / "classifier"),
        ],
        rest_port=0,
        grpc_port=None,
        batching=BatchingParameters(max_batch_size=8),
        file_system_poll_wait_seconds=0,
        max_request_bytes=4096,
    )
    with ModelServer(options) as server:
        yield server


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=30,
)
documents = st.dictionaries(
    st.sampled_from(["instances", "inputs", "signature_name", "examples", "context", "b64"]), json_values, max_size=3
)
bodies = (
    documents.map(lambda d: json.dumps(d).encode())
    | st.binary(max_size=64)
    | st.text(max_size=64).map(str.encode)
    | st.just(b"x" * 5000)
)
paths = st.sampled_from(
    [
        "/v1/models/half:predict",
        "/v1/models/multi:predict",
        "/v1/models/strings:predict",
        "/v1/models/classifier:classify",
        "/v1/models/classifier:regress",
        "/v1/models/half/versions/4:predict",
        "/v1/models/half/labels/x:predict",
        "/v1/models/%2e%2e%2fhalf:predict",
        "/v1/models/half/versions/1:regress",
        "/v1/models/:predict",
    ]
)


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(path=paths, body=bodies)
def test_fuzzed_requests_get_4xx_json_and_the_server_keeps_serving(fuzz_server, path, body):
    request = urllib.request.Request(fuzz_server.rest_url + path, data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    document = json.loads(text)
    if status == 200:
        assert set(document) & {"predictions", "outputs", "results"}
    else:
        assert 400 <= status < 500, (status, document)
        assert isinstance(document["error"], str) and document["error"]
    healthy = urllib.request.Request(
        fuzz_server.rest_url + "/v1/models/half:predict", data=b'{"instances": [1.0, 2.0, 5.0]}', method="POST"
    )
    with urllib.request.urlopen(healthy, timeout=30) as response:
        assert json.loads(response.read()) == {"predictions": [5.5, 6.0, 7.5]}  # version 4: 0.5 x + 5
