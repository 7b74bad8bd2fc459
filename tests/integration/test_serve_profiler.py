"""TensorFlow's profiler client against the serving gRPC port (TensorBoard's "Capture profile")."""

from __future__ import annotations

import threading
import urllib.request

import grpc
import pytest

from tfpilot.serve import ModelServer, ServedModel, ServerOptions, demo_models


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("profiled")
    demo_models.write_half_plus_two(root / "half", 1)
    options = ServerOptions(models=[ServedModel(name="half", base_path=root / "half")], rest_port=0, grpc_port=0)
    with ModelServer(options) as running:
        yield running


def test_trace_captures_the_requests_served_meanwhile(server, tmp_path):
    from tensorflow.python.profiler import profiler_client
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    stop = threading.Event()
    answered: list[bytes] = []

    def send_requests() -> None:
        while not stop.is_set():
            request = urllib.request.Request(
                f"{server.rest_url}/v1/models/half:predict", data=b'{"instances": [1.0, 2.0]}', method="POST"
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                answered.append(response.read())

    sender = threading.Thread(target=send_requests)
    sender.start()
    try:
        profiler_client.trace(server.grpc_target, str(tmp_path), 1000, "", 3)
    finally:
        stop.set()
        sender.join()
    traces = sorted(tmp_path.glob("plugins/profile/*/*.xplane.pb"))
    assert len(traces) == 1, sorted(str(p) for p in tmp_path.rglob("*"))
    space = xplane_pb2.XSpace()
    space.ParseFromString(traces[0].read_bytes())
    names = {m.name for plane in space.planes for m in plane.event_metadata.values()}
    assert any("Mul" in name or "AddV2" in name or "__inference" in name for name in names), sorted(names)[:40]
    assert answered and all(b"predictions" in body for body in answered)  # serving went on meanwhile


def test_profile_requests_are_validated(server):
    from tfpilot.serve.profiler import profile_request_type, profile_response_type

    request_type, response_type = profile_request_type(), profile_response_type()
    # An XSpace holds every thread's events of the window: in a test process that has already run
    # other tests (xdist workers are reused) 50 ms came to 6 MB, over gRPC's 4 MB receive default.
    # TensorBoard's capture client lifts the limit the same way.
    options = [("grpc.max_receive_message_length", -1)]
    with grpc.insecure_channel(server.grpc_target, options=options) as channel:
        profile = channel.unary_unary(
            "/tensorflow.ProfilerService/Profile",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response_type.FromString,
        )
        bad = [
            request_type(duration_ms=100, repository_root="relative/dir", session_id="s", host_name="h"),
            request_type(duration_ms=100, repository_root="/tmp", session_id="../escape", host_name="h"),
            request_type(duration_ms=0),
        ]
        for request in bad:
            with pytest.raises(grpc.RpcError) as caught:
                profile(request, timeout=30)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        reply = profile(request_type(duration_ms=50, emit_xspace=True), timeout=60)
    assert not reply.empty_trace and reply.xspace  # no repository_root: the trace comes back only
