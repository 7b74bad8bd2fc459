"""tensorflow_model_server's construction flags on live servers on 127.0.0.1 with real clients.

TLS (--ssl_config_file) on gRPC and REST, --grpc_channel_arguments, the concurrency bounds
(--grpc_max_threads, --rest_api_num_threads), load retries with no file-system polling,
--allow_version_labels_for_unavailable_models at startup, and the TensorFlow thread pools.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from conftest import rest_url, start_serve, wait_until_serving
from tfpilot.errors import ServeError
from tfpilot.serve import ModelServer, ServedModel, ServerOptions, demo_models
from tfpilot.serve.transport import (
    ConcurrencyLimit,
    grpc_limit_interceptor,
    limit_handler,
    parse_grpc_channel_arguments,
    parse_ssl_config,
)

TFPILOT = [sys.executable, "-m", "tfpilot.cli.main"]
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}


# ------------------------------------------------------------------------------ certificates


def _pem_key(key) -> str:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _certificate(subject: str, key, *, issuer=None, issuer_key=None, server: bool = False, ca: bool = False):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    elif not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return builder.sign(issuer_key or key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, str]:
    """A throwaway CA, a server certificate for 127.0.0.1/localhost and a client certificate (PEM)."""
    pytest.importorskip("cryptography")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca_key, server_key, client_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    ca = _certificate("tfpilot test CA", ca_key, ca=True)
    server = _certificate("127.0.0.1", server_key, issuer=ca.subject, issuer_key=ca_key, server=True)
    client = _certificate("client", client_key, issuer=ca.subject, issuer_key=ca_key)
    pem = serialization.Encoding.PEM
    files = {
        "ca": ca.public_bytes(pem).decode(),
        "server_cert": server.public_bytes(pem).decode(),
        "server_key": _pem_key(server_key),
        "client_cert": client.public_bytes(pem).decode(),
        "client_key": _pem_key(client_key),
    }
    directory = tmp_path_factory.mktemp("pki")
    for name, text in list(files.items()):
        (directory / f"{name}.pem").write_text(text)
        files[f"{name}_file"] = str(directory / f"{name}.pem")
    return files


def ssl_config_text(pki: dict[str, str], *, client_verify: bool) -> str:
    fields = {"server_key": pki["server_key"], "server_cert": pki["server_cert"]}
    if client_verify:
        fields["custom_ca"] = pki["ca"]
    text = " ".join(f"{name}: {json.dumps(value)}" for name, value in fields.items())
    return text + (" client_verify: true" if client_verify else "")


@pytest.fixture(scope="module")
def half(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("models") / "half"
    demo_models.write_half_plus_two(base, 1)
    return base


def grpc_predict(channel, values: list[float], *, timeout: float = 30) -> list[float]:
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    request = predict_pb2.PredictRequest()
    request.model_spec.name = "half"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto(np.array(values, np.float32)))
    reply = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=timeout)
    return tf.make_ndarray(reply.outputs["y"]).tolist()


def rest_predict(url: str, values: list[float], *, context: ssl.SSLContext | None = None) -> list[float]:
    body = json.dumps({"instances": values}).encode()
    request = urllib.request.Request(f"{url}/v1/models/half:predict", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=30, context=context) as response:
        return json.loads(response.read())["predictions"]


# ------------------------------------------------------------------------------------- TLS


def test_ssl_config_is_parsed_and_bad_configs_fail_in_one_line(pki):
    config = parse_ssl_config(ssl_config_text(pki, client_verify=True))
    assert config.client_verify and config.custom_ca == pki["ca"] and config.server_cert == pki["server_cert"]
    assert "PRIVATE KEY" not in repr(config)
    with pytest.raises(ServeError, match="needs server_key"):
        parse_ssl_config(f"server_cert: {json.dumps(pki['server_cert'])}")
    with pytest.raises(ServeError, match="must hold the PEM text itself"):
        parse_ssl_config('server_key: "/etc/ssl/key.pem" server_cert: "/etc/ssl/cert.pem"')
    with pytest.raises(ServeError, match="Error parsing text-format tensorflow.serving.SSLConfig"):
        parse_ssl_config("server_key { }")
    mismatched = f"server_key: {json.dumps(pki['client_key'])} server_cert: {json.dumps(pki['server_cert'])}"
    with pytest.raises(ServeError, match="not a matching PEM key and certificate"):
        parse_ssl_config(mismatched)


def test_tls_serves_grpc_and_rest_to_clients_that_trust_the_certificate_only(pki, half):
    import grpc

    options = ServerOptions(
        models=[ServedModel(name="half", base_path=half)],
        rest_port=0,
        grpc_port=0,
        file_system_poll_wait_seconds=0,
        tls=parse_ssl_config(ssl_config_text(pki, client_verify=False)),
    )
    with ModelServer(options) as server:
        assert server.rest_url.startswith("https://127.0.0.1:")
        trusted = grpc.ssl_channel_credentials(root_certificates=pki["ca"].encode())
        with grpc.secure_channel(server.grpc_target, trusted) as channel:
            assert grpc_predict(channel, [1.0, 2.0]) == [2.5, 3.0]
        with grpc.insecure_channel(server.grpc_target) as channel, pytest.raises(grpc.RpcError) as plain:
            grpc_predict(channel, [1.0], timeout=5)
        assert plain.value.code() == grpc.StatusCode.UNAVAILABLE
        context = ssl.create_default_context(cafile=pki["ca_file"])
        assert rest_predict(server.rest_url, [5.0], context=context) == [4.5]
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            rest_predict(server.rest_url, [5.0], context=ssl.create_default_context())
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            rest_predict(server.rest_url.replace("https://", "http://"), [5.0])


@pytest.mark.slow
def test_cli_ssl_config_file_with_client_verify_wants_a_client_certificate_on_grpc_and_rest(tmp_path, pki, half):
    import grpc

    config = tmp_path / "ssl.config"
    config.write_text(ssl_config_text(pki, client_verify=True))
    process = start_serve(
        [
            "--port=0",
            "--rest_api_port=auto",
            "--model_name=half",
            f"--model_base_path={half}",
            "--file_system_poll_wait_seconds=0",
            f"--ssl_config_file={config}",
        ],
        ENV,
    )
    try:
        output = wait_until_serving(process)
        rest = rest_url(output, scheme="https")
        target = re.search(r"gRPC  (127\.0\.0\.1:\d+) \(TLS\)", output).group(1)
        with_client = grpc.ssl_channel_credentials(
            root_certificates=pki["ca"].encode(),
            private_key=pki["client_key"].encode(),
            certificate_chain=pki["client_cert"].encode(),
        )
        with grpc.secure_channel(target, with_client) as channel:
            assert grpc_predict(channel, [4.0]) == [4.0]
        anonymous = grpc.ssl_channel_credentials(root_certificates=pki["ca"].encode())
        with grpc.secure_channel(target, anonymous) as channel, pytest.raises(grpc.RpcError) as refused:
            grpc_predict(channel, [4.0], timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        context = ssl.create_default_context(cafile=pki["ca_file"])
        context.load_cert_chain(pki["client_cert_file"], pki["client_key_file"])
        assert rest_predict(rest, [1.0], context=context) == [2.5]
        with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
            rest_predict(rest, [1.0], context=ssl.create_default_context(cafile=pki["ca_file"]))
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# --------------------------------------------------------------------- gRPC channel arguments


def test_grpc_channel_arguments_parse_like_tf_serving_and_reach_the_server(half):
    import grpc

    assert parse_grpc_channel_arguments("grpc.max_connection_age_ms=2000,grpc.lb_policy_name=grpclb") == (
        ("grpc.max_connection_age_ms", 2000),
        ("grpc.lb_policy_name", "grpclb"),
    )
    assert parse_grpc_channel_arguments("") == () and parse_grpc_channel_arguments("a=99999999999") == (
        ("a", "99999999999"),  # beyond int32: a string, as TF Serving's SimpleAtoi into int32 does
    )
    with pytest.raises(ServeError, match="`grpc.so_reuseaddr` is not key=value"):
        parse_grpc_channel_arguments("grpc.keepalive_time_ms=1,grpc.so_reuseaddr")
    options = ServerOptions(
        models=[ServedModel(name="half", base_path=half)],
        rest_port=None,
        grpc_port=0,
        file_system_poll_wait_seconds=0,
        # replaces tfpilot's own receive limit (--max_request_bytes): the argument reached gRPC
        grpc_channel_arguments=parse_grpc_channel_arguments("grpc.max_receive_message_length=2048"),
    )
    with ModelServer(options) as server, grpc.insecure_channel(server.grpc_target) as channel:
        assert grpc_predict(channel, [1.0]) == [2.5]
        with pytest.raises(grpc.RpcError) as too_big:
            grpc_predict(channel, [1.0] * 1024)
        assert too_big.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_cli_rejects_a_malformed_channel_argument_and_a_negative_poll_wait(half):
    bad = subprocess.run(
        [*TFPILOT, "serve", "--port=0", f"--model_base_path={half}", "--grpc_channel_arguments=nokey"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert bad.returncode == 2 and "--grpc_channel_arguments: `nokey` is not key=value" in bad.stderr
    negative = subprocess.run(
        [*TFPILOT, "serve", "--port=0", f"--model_base_path={half}", "--file_system_poll_wait_seconds=-1"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert negative.returncode == 2 and "--file_system_poll_wait_seconds must be >= 0" in negative.stderr


# ------------------------------------------------------------------------- concurrency bounds


def test_a_rest_concurrency_limit_holds_requests_beyond_it_until_a_slot_frees():
    """limit_handler on a real aiohttp server: with 2 slots, 5 requests run 2 at a time."""
    import aiohttp
    from aiohttp import web

    async def main() -> None:
        limit = ConcurrencyLimit(2)
        release = asyncio.Event()
        arrived = 0

        async def gated(request: web.BaseRequest) -> web.Response:
            await release.wait()
            return web.Response(text="ok")

        async def counting(request: web.BaseRequest) -> web.StreamResponse:
            nonlocal arrived
            arrived += 1
            return await limited(request)

        limited = limit_handler(gated, limit)
        runner = web.ServerRunner(web.Server(counting), handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            async with aiohttp.ClientSession() as session:

                async def get() -> str:
                    async with session.get(f"http://127.0.0.1:{port}/") as response:
                        return await response.text()

                calls = [asyncio.create_task(get()) for _ in range(5)]
                while arrived < 5:
                    await asyncio.sleep(0.01)
                assert (limit.running, limit.waiting) == (2, 3)
                release.set()
                assert await asyncio.gather(*calls) == ["ok"] * 5
                assert limit.peak == 2 and (limit.running, limit.waiting) == (0, 0)
        finally:
            await runner.cleanup()

    asyncio.run(main())


def test_a_grpc_concurrency_limit_holds_calls_beyond_it_until_a_slot_frees():
    """grpc_limit_interceptor on a real grpc.aio server: with 2 slots, 5 calls run 2 at a time."""
    import grpc

    async def main() -> None:
        limit = ConcurrencyLimit(2)
        release = asyncio.Event()
        arrived = 0

        class Arrivals(grpc.aio.ServerInterceptor):
            async def intercept_service(self, continuation, handler_call_details):
                nonlocal arrived
                arrived += 1
                return await continuation(handler_call_details)

        async def echo(request: bytes, context) -> bytes:
            await release.wait()
            return request

        server = grpc.aio.server(interceptors=[Arrivals(), grpc_limit_interceptor(limit)])
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("test.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)})]
        )
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = channel.unary_unary("/test.Echo/Echo")
                calls = [asyncio.ensure_future(call(bytes([i]), timeout=60)) for i in range(5)]
                while arrived < 5 or limit.running + limit.waiting < 5:
                    await asyncio.sleep(0.01)
                assert (limit.running, limit.waiting) == (2, 3)
                release.set()
                assert await asyncio.gather(*calls) == [bytes([i]) for i in range(5)]
                assert limit.peak == 2
        finally:
            await server.stop(None)

    asyncio.run(main())


def test_rest_api_num_threads_and_grpc_max_threads_bound_a_model_server_under_load(half):
    import grpc

    options = ServerOptions(
        models=[ServedModel(name="half", base_path=half)],
        rest_port=0,
        grpc_port=0,
        file_system_poll_wait_seconds=0,
        rest_api_num_threads=2,
        grpc_max_threads=3,
    )
    with ModelServer(options) as server:
        assert server.rest_limit is not None and server.grpc_limit is not None
        errors: list[BaseException] = []

        def rest_client() -> None:
            try:
                for _ in range(5):
                    assert rest_predict(server.rest_url, [1.0]) == [2.5]
            except BaseException as error:  # reported below, in the test's thread
                errors.append(error)

        with grpc.insecure_channel(server.grpc_target) as channel:

            def grpc_client() -> None:
                try:
                    for _ in range(5):
                        assert grpc_predict(channel, [2.0]) == [3.0]
                except BaseException as error:
                    errors.append(error)

            clients = [threading.Thread(target=rest_client) for _ in range(8)]
            clients += [threading.Thread(target=grpc_client) for _ in range(8)]
            for client in clients:
                client.start()
            for client in clients:
                client.join(timeout=120)
        assert not errors, errors[0]
        assert 1 <= server.rest_limit.peak <= 2 and 1 <= server.grpc_limit.peak <= 3


# -------------------------------------------------------------- load retries, labels, threads


def _status(rest: str) -> dict[str, dict]:
    with urllib.request.urlopen(f"{rest}/v1/models/half", timeout=30) as response:
        return {v["version"]: v for v in json.loads(response.read())["model_version_status"]}


@pytest.mark.slow
def test_cli_retries_a_failed_load_without_file_system_polling_then_reports_end(tmp_path, half):
    base = tmp_path / "half"
    shutil.copytree(half / "1", base / "1")
    demo_models.write_corrupt_version(base, 2)
    process = start_serve(
        [
            "--port=-1",
            "--rest_api_port=auto",
            "--model_name=half",
            f"--model_base_path={base}",
            "--file_system_poll_wait_seconds=0",
            "--max_num_load_retries=2",
            "--load_retry_interval_micros=1000",
        ],
        ENV,
    )
    try:
        output = wait_until_serving(process)
        assert "v2 LOADING" in output and "v1 AVAILABLE" in output
        rest = rest_url(output)
        deadline = time.monotonic() + 120
        while _status(rest)["2"]["state"] != "END":  # the retries run in the server's own thread
            assert time.monotonic() < deadline, _status(rest)
            time.sleep(0.05)
        ended = _status(rest)["2"]["status"]
        assert ended["error_code"] == "UNKNOWN" and ended["error_message"].endswith("(after 3 load attempts)")
        assert rest_predict(rest, [2.0]) == [3.0]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        stderr = process.stderr.read() if process.stderr else ""
        assert "load attempt 1 of 3 failed" in stderr and "load attempt 2 of 3 failed" in stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_cli_labels_of_unloaded_versions_need_the_flag_then_resolve_once_the_version_loads(tmp_path, half):
    base = tmp_path / "half"
    shutil.copytree(half / "1", base / "1")
    config = tmp_path / "models.config"
    config.write_text(
        f'model_config_list {{ config {{ name: "half" base_path: "{base}" model_platform: "tensorflow" '
        "model_version_policy { specific { versions: 1 versions: 2 } } "
        'version_labels { key: "stable" value: 1 } version_labels { key: "canary" value: 2 } } }'
    )
    command = [*TFPILOT, "serve", "--port=-1", "--rest_api_port=auto", f"--model_config_file={config}"]
    refused = subprocess.run(
        [*command, "--file_system_poll_wait_seconds=0"], capture_output=True, text=True, env=ENV, timeout=180
    )
    assert refused.returncode == 2
    assert "label canary to version 2 of model half, which is not currently available" in refused.stderr
    assert "--allow_version_labels_for_unavailable_models" in refused.stderr
    process = start_serve(
        [
            *command[len(TFPILOT) + 1 :],
            "--file_system_poll_wait_seconds=0.2",
            "--allow_version_labels_for_unavailable_models=true",
        ],
        ENV,
    )
    try:
        rest = rest_url(wait_until_serving(process))
        canary = f"{rest}/v1/models/half/labels/canary"
        with pytest.raises(urllib.error.HTTPError) as not_yet:
            urllib.request.urlopen(canary, timeout=30)
        assert not_yet.value.code == 404
        demo_models.write_half_plus_two(tmp_path / "staging", 2, offset=10.0)
        os.replace(tmp_path / "staging" / "2", base / "2")  # published whole, as a push does
        deadline = time.monotonic() + 120
        while _status(rest).get("2", {}).get("state") != "AVAILABLE":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        request = urllib.request.Request(f"{canary}:predict", data=b'{"instances": [2.0]}', method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read()) == {"predictions": [11.0]}
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "inter_op_threads"),
    [
        (["--tensorflow_session_parallelism=4"], 4),
        (["--tensorflow_session_parallelism=4", "--tensorflow_inter_op_parallelism=3"], 3),
    ],
)
def test_cli_parallelism_flags_size_tensorflows_inter_op_pool(half, flags, inter_op_threads):
    process = start_serve(
        [
            "--port=0",
            "--rest_api_port=auto",
            f"--model_base_path={half}",
            "--model_name=half",
            # the construction flags, spelled as a TF Serving launch script does, start a working server
            "--rest_api_num_threads=4",
            "--grpc_max_threads=4",
            "--num_load_threads=2",
            "--grpc_channel_arguments=grpc.max_connection_age_ms=60000,grpc.lb_policy_name=grpclb",
            *flags,
        ],
        ENV,
    )
    try:
        rest = rest_url(wait_until_serving(process))
        assert rest_predict(rest, [2.0]) == [3.0]
        # TensorFlow names its inter-op pool's threads tf_Compute (2 on this 2-core machine by default).
        tasks = Path(f"/proc/{process.pid}/task")
        names = [(task / "comm").read_text().strip() for task in tasks.iterdir()]
        assert names.count("tf_Compute") == inter_op_threads, sorted(set(names))
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_the_docs_flag_table_covers_tf_servings_48_flags_as_they_are_implemented():
    import typer.main

    from tfpilot.cli.main import app
    from tfpilot.serve.tf_serving_flags import ACCEPTED_FLAGS

    text = (Path(__file__).resolve().parents[2] / "docs" / "serve.md").read_text()
    table = text.split("| TF Serving flag | here | why |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| `")]
    documented = {name: cells[2].strip() for cells in rows for name in re.findall(r"`([a-z_0-9]+)`", cells[1])}
    assert len(documented) == 48
    serve = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    options = {option.lstrip("-") for param in serve.params for option in param.opts}
    for name, how in documented.items():
        assert how in ("implemented", "notice"), name
        assert (name in ACCEPTED_FLAGS) == (how == "notice"), name
        assert (name in options) == (how == "implemented"), name
    assert set(ACCEPTED_FLAGS) <= set(documented)


def test_model_config_file_polling_adds_models_without_file_system_polling_and_refuses_early_labels(
    tmp_path, half, caplog
):
    caplog.set_level("WARNING", logger="tfpilot.serve")
    other = tmp_path / "other"
    demo_models.write_half_plus_two(other, 1, offset=10.0)
    config = tmp_path / "models.config"

    def write_config(*entries: str) -> None:
        config.write_text("model_config_list { " + " ".join(entries) + " }")
        stat = config.stat()  # a later mtime even on a coarse clock: the server re-reads on change
        os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000 * (1 + len(entries))))

    def entry(name: str, base: Path, labels: str = "") -> str:
        return f'config {{ name: "{name}" base_path: "{base}" model_platform: "tensorflow" {labels} }}'

    write_config(entry("half", half))
    options = ServerOptions(
        models=[],
        model_config_file=config,
        model_config_file_poll_wait_seconds=0.1,
        file_system_poll_wait_seconds=0,
        rest_port=0,
        grpc_port=None,
    )
    from tfpilot.serve import load_model_config_file

    options.models = load_model_config_file(config)
    with ModelServer(options) as server:
        write_config(entry("half", half), entry("other", other))
        deadline = time.monotonic() + 120
        while server.registry.readiness().get("other") is not True:
            assert time.monotonic() < deadline, server.registry.all_status()
            time.sleep(0.05)
        # a label of a version that does not exist: the reload is refused, the config stays
        write_config(
            entry("half", half), entry("other", other, 'version_labels { key: "next" value: 7 }'), entry("x", other)
        )
        deadline = time.monotonic() + 120
        while not any("not reloaded" in r.getMessage() and "label next" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
            time.sleep(0.05)
        assert server.registry.model_names() == ["half", "other"] and server.registry.labels("other") == {}
