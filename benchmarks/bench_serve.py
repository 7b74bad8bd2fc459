"""Benchmark `tfpilot serve`: REST and gRPC, batched and unbatched, against two anchors.

Anchors, measured in the same run on the same machine:
  * the in-process limit: the loaded SavedModel signature called directly with full batches
    (max_batch_size examples per call), in examples per second - no server can beat it;
  * a naive server: one HTTP request -> one json.loads -> one model call (ThreadingHTTPServer),
    which is what a hand-written Flask/FastAPI wrapper does.

A bounded load generator on 127.0.0.1 (a fixed number of concurrent clients, each waiting for
its answer before sending again) drives each server at concurrency 1, 8 and 64 with one
example per request, and reports throughput and p50/p99 latency. The servers run in one
child process. The load generator is h2load when it is on PATH (Debian/Ubuntu package
``nghttp2-client``; this script never installs it), in its own process: REST as N HTTP/1.1
keep-alive connections, gRPC as one HTTP/2 connection with N concurrent streams (a gRPC channel
multiplexes its calls); one gRPC call with the same bytes is checked first and gRPC errors are
counted from the server's metrics, since h2load sees HTTP 200 only. Without h2load (or with
``--python-clients``) Python clients in this process drive the servers; they cost the shared
cores ~30 us (REST) and ~100 us (gRPC) of CPU per request, which the server then lacks. The
first lines of the output say which generator ran. Each row also reports the CPU
per request of the server's event loop thread (``loop us``: the per-request work of the REST/gRPC
front end, without the model's), of the whole server process and of the load generator, and
``cpu x``: the model's own CPU
per example (in-process, full batches) over their sum, the ratio the server would reach on a
machine it had to itself - on a shared machine req/s swings with other jobs' load, CPU much less.
``idle`` is the whole machine's idle CPU during the row (warm-up and drain included, as for the
CPU columns): where it stays well above 0 on a quiet
machine, the server leaves cores unused and ``cpu x`` overstates what req/s can reach.

    python benchmarks/bench_serve.py --quick        # < 90 s
    python benchmarks/bench_serve.py                # longer windows (~80 s)
    python benchmarks/bench_serve.py --overhead     # adds half_plus_two: per-request overhead alone
    python benchmarks/bench_serve.py --python-clients  # the Python load generator even with h2load
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CONCURRENCY = (1, 8, 64)
MAX_BATCH_SIZE = 64
FEATURES = 64


# ------------------------------------------------------------------------------ models


def write_mlp(base_path: Path, *, width: int) -> int:
    """x float32 [-1, 64] -> probabilities [-1, 10] through three ReLU layers of ``width``.
    Returns multiply-adds per example."""
    import tensorflow as tf

    from tfpilot.atomic import atomic_directory

    sizes = [FEATURES, width, width, width, 10]

    class Mlp(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            generator = tf.random.Generator.from_seed(0)
            self.layers = [
                (tf.Variable(generator.normal([a, b]) / a**0.5), tf.Variable(tf.zeros([b])))
                for a, b in zip(sizes[:-1], sizes[1:], strict=False)
            ]

        @tf.function(input_signature=[tf.TensorSpec([None, FEATURES], tf.float32, name="x")])
        def serve(self, x):
            for index, (kernel, bias) in enumerate(self.layers):
                x = tf.matmul(x, kernel) + bias
                if index < len(self.layers) - 1:
                    x = tf.nn.relu(x)
            return {"probabilities": tf.nn.softmax(x)}

    module = Mlp()
    with atomic_directory(base_path / "1", overwrite=True) as tmp:
        tf.saved_model.save(module, str(tmp), signatures={"serving_default": module.serve})
    return sum(a * b for a, b in zip(sizes[:-1], sizes[1:], strict=False))


def write_cnn(base_path: Path, *, channels: int) -> int:
    """x float32 [-1, 16, 16, 4] -> probabilities [-1, 10]: four 3x3 ReLU convolutions of
    ``channels``, global average pooling, dense. Compute-bound like image models. Returns
    multiply-adds per example."""
    import tensorflow as tf

    from tfpilot.atomic import atomic_directory

    shapes = [(3, 3, 4, channels)] + [(3, 3, channels, channels)] * 3

    class Cnn(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            generator = tf.random.Generator.from_seed(0)
            self.kernels = [tf.Variable(generator.normal(s) / (s[0] * s[1] * s[2]) ** 0.5) for s in shapes]
            self.dense = tf.Variable(generator.normal([channels, 10]) / channels**0.5)

        @tf.function(input_signature=[tf.TensorSpec([None, 16, 16, 4], tf.float32, name="x")])
        def serve(self, x):
            for kernel in self.kernels:
                x = tf.nn.relu(tf.nn.conv2d(x, kernel, 1, "SAME"))
            return {"probabilities": tf.nn.softmax(tf.matmul(tf.reduce_mean(x, axis=[1, 2]), self.dense))}

    module = Cnn()
    with atomic_directory(base_path / "1", overwrite=True) as tmp:
        tf.saved_model.save(module, str(tmp), signatures={"serving_default": module.serve})
    return sum(16 * 16 * a * b * c * d for a, b, c, d in shapes) + channels * 10


def in_process_limit(version_dir: Path, example: object, seconds: float) -> tuple[float, float, float, float]:
    """(examples/s with full batches, examples/s with one example per call, CPU seconds per
    example with full batches, examples/s with half batches), same process.

    Half batches are what a batched server forms at concurrency 64 (one half runs while the
    other is being answered and sent again): this line tells whether that batch size, rather
    than the server, is what holds a ratio down.

    Best of three windows each: the limit is what the model can do, so a window slowed by
    another process on the machine should not lower it.
    """
    import numpy as np
    import tensorflow as tf

    function = tf.saved_model.load(str(version_dir)).signatures["serving_default"]
    output_name = next(iter(function.structured_outputs))
    results = []
    cpu_per_example = float("inf")
    for batch_size in (MAX_BATCH_SIZE, 1, MAX_BATCH_SIZE // 2):
        batch = tf.constant(np.array([example] * batch_size, np.float32))
        for _ in range(3):
            function(x=batch)
        best = 0.0
        for _ in range(3):
            calls, started, cpu_started = 0, time.perf_counter(), time.process_time()
            while time.perf_counter() - started < seconds / 3:
                function(x=batch)[output_name].numpy()
                calls += 1
            best = max(best, calls * batch_size / (time.perf_counter() - started))
            if batch_size == MAX_BATCH_SIZE:
                cpu_per_example = min(cpu_per_example, (time.process_time() - cpu_started) / (calls * batch_size))
        results.append(best)
    return results[0], results[1], cpu_per_example, results[2]


# ------------------------------------------------------------------------ server host


def serve_host(base_path: Path, batch_threads: int) -> None:
    """Child process: batched and unbatched tfpilot servers plus the naive server."""
    import http.server
    import socket

    import numpy as np
    import tensorflow as tf

    from tfpilot.serve import BatchingParameters, ModelServer, ServedModel, ServerOptions

    def options(batching):
        return ServerOptions(
            models=[ServedModel(name="model", base_path=base_path)],
            rest_port=0,
            grpc_port=0,
            batching=batching,
            file_system_poll_wait_seconds=0,
        )

    batched = ModelServer(
        options(
            BatchingParameters(max_batch_size=MAX_BATCH_SIZE, max_enqueued_batches=16, num_batch_threads=batch_threads)
        )
    ).start()
    unbatched = ModelServer(options(None)).start()

    function = tf.saved_model.load(str(base_path / "1")).signatures["serving_default"]
    output_name = next(iter(function.structured_outputs))

    answered = [0]  # naive requests answered (h2load counts only its measured window)

    class Naive(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes; without TCP_NODELAY, Nagle's algorithm and
            # delayed ACKs would add ~40 ms per request and make this anchor look unfairly slow.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers["Content-Length"]))
            instances = np.asarray(json.loads(body)["instances"], np.float32)
            output = function(x=tf.constant(instances))[output_name].numpy()
            payload = json.dumps({"predictions": output.tolist()}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            answered[0] += 1  # one += at a time: the GIL makes it atomic enough for a count

        def log_message(self, *args) -> None:
            pass

    naive = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Naive)
    naive.daemon_threads = True
    threading.Thread(target=naive.serve_forever, daemon=True).start()
    print(
        json.dumps(
            {
                "batched_rest": batched.rest_url,
                "batched_grpc": batched.grpc_target,
                "unbatched_rest": unbatched.rest_url,
                "unbatched_grpc": unbatched.grpc_target,
                "naive_rest": f"http://127.0.0.1:{naive.server_address[1]}",
            }
        ),
        flush=True,
    )
    servers = {"batched": batched, "unbatched": unbatched}
    # Each "cpu" line from the parent: the CPU seconds each server's event loop thread has used
    # (the per-request work of REST/gRPC decoding, checks and responses, without the model's),
    # and the naive server's answers so far. EOF (the parent closes stdin) stops us.
    for line in sys.stdin:
        if line.strip() == "cpu":
            cpu: dict[str, float] = {"naive_requests": answered[0]}
            for kind, server in servers.items():
                loop = server._loop  # the bench reads the loop thread's clock; no public API needed

                async def thread_cpu() -> float:
                    return time.thread_time()

                cpu[kind] = asyncio.run_coroutine_threadsafe(thread_cpu(), loop).result(timeout=60)
            print(json.dumps(cpu), flush=True)
    naive.shutdown()
    batched.stop()
    unbatched.stop()


# ------------------------------------------------------------------------ load generator


def latency_summary(latencies: list[float], *, seconds: float) -> dict[str, float]:
    """Requests per second and p50/p99 in ms of one window's answered requests (seconds each)."""
    ordered, count = sorted(latencies), len(latencies)
    return {
        "throughput": count / seconds,
        "p50_ms": 1000 * ordered[count // 2] if count else float("nan"),
        "p99_ms": 1000 * ordered[min(count - 1, int(count * 0.99))] if count else float("nan"),
    }


async def _drive(make_sender, concurrency: int, seconds: float, warmup: float) -> dict:
    """``concurrency`` clients, each sending its next request when the previous one answered."""
    latencies: list[float] = []
    errors = 0
    answered = 0  # during warm-up and drain too: CPU is measured over the whole run
    measuring = False
    stop = False

    async def client() -> None:
        nonlocal errors, answered
        send, close = await make_sender()
        try:
            while not stop:
                started = time.perf_counter()
                ok = await send()
                answered += 1
                if measuring:
                    latencies.append(time.perf_counter() - started)
                    errors += 0 if ok else 1
        finally:
            await close()

    tasks = [asyncio.ensure_future(client()) for _ in range(concurrency)]
    await asyncio.sleep(warmup)
    measuring = True
    window_start = time.perf_counter()
    await asyncio.sleep(seconds)
    measuring = False
    elapsed = time.perf_counter() - window_start
    stop = True
    await asyncio.gather(*tasks)
    return {**latency_summary(latencies, seconds=elapsed), "errors": errors, "answered": answered}


def run_rest(url: str, body: bytes, concurrency: int, seconds: float, warmup: float) -> dict:
    """HTTP/1.1 keep-alive clients on raw asyncio streams, one connection each.

    A minimal client (like wrk or hey) so that the load generator, which shares the CPU with
    the server, spends as little of it as possible; an aiohttp client costs several times more.
    """
    import socket
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    request = (
        f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body

    async def make_sender():
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        async def send() -> bool:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            lowered = head.lower()
            start = lowered.index(b"content-length:") + len(b"content-length:")
            length = int(lowered[start : lowered.index(b"\r\n", start)])
            await reader.readexactly(length)
            return head[9:12] == b"200"

        async def close() -> None:
            writer.close()

        return send, close

    return asyncio.run(_drive(make_sender, concurrency, seconds, warmup))


def predict_payload(example: object) -> bytes:
    """A serialized PredictRequest for ``model`` with one example as input ``x``."""
    import numpy as np
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = "model"
    request.inputs["x"].CopyFrom(tf.make_tensor_proto(np.array([example], np.float32)))
    return request.SerializeToString()


def run_grpc(target: str, example: object, concurrency: int, seconds: float, warmup: float) -> dict:
    """grpc.aio clients multiplexed on one channel, as a TF Serving client is written.

    Kept as lean as the REST clients: the PredictRequest is serialized once and the answers are
    not parsed (the REST clients read the body without decoding its JSON either); a status
    other than OK counts as an error.
    """
    import grpc

    payload = predict_payload(example)

    async def main() -> dict:
        async with grpc.aio.insecure_channel(target) as channel:
            # No serializers: bytes go out as they are and come back unparsed.
            predict = channel.unary_unary("/tensorflow.serving.PredictionService/Predict")

            async def send() -> bool:
                try:
                    await predict(payload, timeout=30)
                    return True
                except grpc.aio.AioRpcError:
                    return False

            async def close() -> None:
                pass

            async def make_sender():
                return send, close  # one HTTP/2 channel multiplexes every client

            return await _drive(make_sender, concurrency, seconds, warmup)

    return asyncio.run(main())


# ------------------------------------------------------------------ h2load load generator
#
# The Python clients above cost the machine ~30 us (REST) and ~100 us (gRPC) of CPU per request,
# taken from the server on a machine with few cores. h2load (Debian/Ubuntu: `apt-get install
# nghttp2-client`) is a C client costing a few us; when it is on PATH it drives both protocols,
# so the rows measure the server rather than the client. This script never installs it.


def h2load_path() -> str | None:
    import shutil

    return shutil.which("h2load")


def grpc_frame(payload: bytes) -> bytes:
    """One gRPC length-prefixed message: flag 0 (uncompressed), 4-byte big-endian length, bytes."""
    return b"\0" + len(payload).to_bytes(4, "big") + payload


def h2load_command(
    h2load: str,
    url: str,
    data_file: Path,
    log_file: Path,
    *,
    grpc: bool,
    concurrency: int,
    seconds: float,
    warmup: float,
) -> list[str]:
    """A closed loop of ``concurrency`` outstanding requests: each answer releases the next.

    REST: ``concurrency`` HTTP/1.1 keep-alive connections, one request at a time each (as the
    Python clients). gRPC: one HTTP/2 connection with ``concurrency`` streams at a time - a
    grpc channel multiplexes its calls over one connection, as the Python clients' channel does.
    """
    command = [h2load, "-D", f"{round(seconds * 1000)}ms", "--warm-up-time", f"{round(warmup * 1000)}ms"]
    command += ["-d", str(data_file), "--log-file", str(log_file)]
    if grpc:
        command += ["-c", "1", "-m", str(concurrency), "-H", "content-type: application/grpc", "-H", "te: trailers"]
    else:
        command += ["--h1", "-c", str(concurrency), "-m", "1", "-H", "content-type: application/json"]
    return command + [url]


def h2load_latencies(log_text: str) -> tuple[list[float], int]:
    """(sorted latencies in seconds, answers other than HTTP 200) from an h2load --log-file:
    one line per request of the measured window, `start us <TAB> status <TAB> duration us`."""
    latencies, not_ok = [], 0
    for line in log_text.splitlines():
        fields = line.split("\t")
        if len(fields) < 3:
            continue
        latencies.append(int(fields[2]) / 1e6)
        not_ok += fields[1] != "200"
    latencies.sort()
    return latencies, not_ok


def run_h2load(
    h2load: str, url: str, data: bytes, *, grpc: bool, concurrency: int, seconds: float, warmup: float
) -> dict:
    """Drive ``url`` with h2load in its own process; its CPU is read from this process's children.

    h2load counts an HTTP 200 as success, and a gRPC error is an HTTP 200 whose trailers say
    otherwise: the caller counts gRPC errors from the server's metrics (and checks one answer
    with a real gRPC client first)."""
    import resource

    with tempfile.TemporaryDirectory(prefix="bench_h2load_") as tmp:
        data_file, log_file = Path(tmp) / "body", Path(tmp) / "log.tsv"
        data_file.write_bytes(data)
        command = h2load_command(
            h2load, url, data_file, log_file, grpc=grpc, concurrency=concurrency, seconds=seconds, warmup=warmup
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        completed = subprocess.run(command, capture_output=True, text=True, timeout=120 + 4 * (seconds + warmup))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if completed.returncode != 0:
            raise RuntimeError(f"h2load failed ({completed.returncode}): {completed.stderr[-2000:]}")
        latencies, not_ok = h2load_latencies(log_file.read_text())
    return {
        **latency_summary(latencies, seconds=seconds),
        "errors": not_ok,
        "generator_cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
    }


def check_grpc_answer(target: str, payload: bytes) -> None:
    """One real gRPC call with h2load's exact bytes: a PredictResponse with outputs, status OK."""
    import grpc
    from tensorflow_serving.apis import predict_pb2

    with grpc.insecure_channel(target) as channel:
        predict = channel.unary_unary("/tensorflow.serving.PredictionService/Predict")
        response = predict_pb2.PredictResponse.FromString(predict(payload, timeout=60))
    if not response.outputs:
        raise RuntimeError(f"gRPC Predict at {target} answered without outputs: {response}")


# ---------------------------------------------------------------------------------- main


def host_counters(host: subprocess.Popen, endpoints: dict, kind: str, protocol: str) -> dict[str, float]:
    """Counters of one server in the host: its event loop thread's CPU seconds (0 for naive),
    requests answered and failed, batcher rows and calls (see server_counts)."""
    assert host.stdin is not None and host.stdout is not None
    host.stdin.write("cpu\n")
    host.stdin.flush()
    reply = json.loads(host.stdout.readline())
    counts = server_counts(endpoints, kind, protocol)
    counts["loop_cpu"] = 0.0 if kind == "naive" else float(reply[kind])
    if kind == "naive":
        counts["requests"] = float(reply["naive_requests"])
    return counts


def machine_idle_and_total() -> tuple[int, int]:
    """(idle + iowait, all) clock ticks of the whole machine so far (Linux /proc/stat)."""
    ticks = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return ticks[3] + ticks[4], sum(ticks)


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, every thread (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_counts(endpoints: dict, kind: str, protocol: str) -> dict[str, float]:
    """Counters so far on a tfpilot server, from its Prometheus endpoint: rows and model calls of
    the batcher, and the requests answered and failed over ``protocol`` (all zero for naive)."""
    import urllib.request

    counts = {"rows": 0.0, "calls": 0.0, "requests": 0.0, "errors": 0.0}
    if kind == "naive":
        return counts
    with urllib.request.urlopen(f"{endpoints[kind + '_rest']}/monitoring/prometheus/metrics", timeout=30) as response:
        text = response.read().decode()
    names = {
        "tfpilot_serve_batch_size_sum{": "rows",
        "tfpilot_serve_batch_size_count{": "calls",
        "tfpilot_serve_requests_total{": "requests",
        "tfpilot_serve_request_errors_total{": "errors",
    }
    for line in text.splitlines():
        for prefix, key in names.items():
            if line.startswith(prefix) and (key in ("rows", "calls") or f'protocol="{protocol}"' in line):
                if key == "errors" and 'status="CANCELLED"' in line:
                    continue  # the calls in flight when h2load's window ends: it resets their streams
                counts[key] += float(line.rsplit(" ", 1)[1])
    return counts


def benchmark_model(
    name: str,
    base_path: Path,
    example: object,
    *,
    seconds: float,
    warmup: float,
    note: str,
    batch_threads: int,
    h2load: str | None,
) -> dict:
    host = subprocess.Popen(
        [sys.executable, __file__, "--serve-host", str(base_path), "--batch-threads", str(batch_threads)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    try:
        # Measured while the server process starts (it competes for CPU), and again after.
        limit, single, limit_cpu, half = in_process_limit(base_path / "1", example, seconds)
        endpoints = json.loads(host.stdout.readline())
        body = json.dumps({"instances": [example]}).encode()
        payload = predict_payload(example)
        if h2load is not None:
            check_grpc_answer(endpoints["batched_grpc"], payload)
            check_grpc_answer(endpoints["unbatched_grpc"], payload)
        rows = []
        for kind in ("batched", "unbatched", "naive"):
            protocols = ("rest",) if kind == "naive" else ("rest", "grpc")
            for protocol in protocols:
                address = endpoints[f"{kind}_{protocol}"]
                for concurrency in CONCURRENCY:
                    before = host_counters(host, endpoints, kind, protocol)
                    server_cpu, client_cpu = process_cpu_seconds(host.pid), time.process_time()
                    idle_before = machine_idle_and_total()
                    url = address if kind == "naive" else f"{address}/v1/models/model:predict"
                    if h2load is not None:
                        if protocol == "grpc":
                            url, data = (
                                f"http://{address}/tensorflow.serving.PredictionService/Predict",
                                grpc_frame(payload),
                            )
                        else:
                            data = body
                        result = run_h2load(
                            h2load,
                            url,
                            data,
                            grpc=protocol == "grpc",
                            concurrency=concurrency,
                            seconds=seconds,
                            warmup=warmup,
                        )
                    elif protocol == "rest":
                        result = run_rest(url, body, concurrency, seconds, warmup)
                    else:
                        result = run_grpc(address, example, concurrency, seconds, warmup)
                    idle_after = machine_idle_and_total()
                    # Idle CPU of the whole machine during the row: near 0 means the cores were
                    # saturated (by us or by other jobs); well above 0 means the server left
                    # cores unused (it waited, rather than computed).
                    ticks = max(1, idle_after[1] - idle_before[1])
                    result["idle"] = (idle_after[0] - idle_before[0]) / ticks
                    client_cpu = time.process_time() - client_cpu + result.pop("generator_cpu", 0.0)
                    server_cpu = process_cpu_seconds(host.pid) - server_cpu
                    after = host_counters(host, endpoints, kind, protocol)
                    if h2load is not None:
                        # h2load reports its measured window only; CPU covers warm-up and drain
                        # too, so per-request CPU divides by every answer the server counted.
                        result["answered"] = after["requests"] - before["requests"]
                        result["errors"] += int(after["errors"] - before["errors"])  # gRPC status != OK
                    answered = max(1, result["answered"])
                    result["loop_us"] = 1e6 * (after["loop_cpu"] - before["loop_cpu"]) / answered
                    result["server_us"] = 1e6 * server_cpu / answered
                    result["client_us"] = 1e6 * client_cpu / answered
                    calls = after["calls"] - before["calls"]
                    result["rows_per_call"] = (after["rows"] - before["rows"]) / calls if calls else float("nan")
                    rows.append({"server": kind, "protocol": protocol, "concurrency": concurrency, **result})
    finally:
        host.stdin.close()
        host.wait(timeout=60)
    # Measured again afterwards: the anchor is the better of the two, so load from other
    # processes during one measurement cannot flatter the ratios.
    limit_after, single_after, limit_cpu_after, half_after = in_process_limit(base_path / "1", example, seconds)
    limit, single, limit_cpu = max(limit, limit_after), max(single, single_after), min(limit_cpu, limit_cpu_after)
    half = max(half, half_after)
    print(f"\n== {name}: {note}")
    print(f"batching: max_batch_size={MAX_BATCH_SIZE} batch_timeout_micros=0 num_batch_threads={batch_threads}")
    print(f"in-process limit (batch {MAX_BATCH_SIZE} per call): {limit:10.0f} examples/s   [anchor = 1.00]")
    print(f"in-process, one example per call:      {single:10.0f} examples/s   [{single / limit:5.2f} x limit]")
    print(
        f"in-process, {MAX_BATCH_SIZE // 2} examples per call:       {half:10.0f} examples/s   [{half / limit:5.2f} x limit]"
    )
    print(f"in-process CPU per example (batch {MAX_BATCH_SIZE}):   {1e6 * limit_cpu:10.0f} us")
    header = f"{'server':10} {'proto':5} {'conc':>4} {'req/s':>9} {'x limit':>8} {'p50 ms':>8} {'p99 ms':>8}"
    print(
        header + f" {'errors':>6} {'rows/call':>9} {'loop us':>7} {'srv us':>7} {'cli us':>7} {'cpu x':>6} {'idle':>5}"
    )
    for row in rows:
        # CPU per request (server process, and this load-generator process) against the model's
        # own CPU per example: the ratio the server would reach on a machine it had to itself,
        # which a shared machine's load cannot move as much as it moves req/s.
        row["cpu_ratio"] = 1e6 * limit_cpu / (row["server_us"] + row["client_us"])
        print(
            f"{row['server']:10} {row['protocol']:5} {row['concurrency']:>4} {row['throughput']:9.0f} "
            f"{row['throughput'] / limit:8.2f} {row['p50_ms']:8.2f} {row['p99_ms']:8.2f} {row['errors']:>6} "
            f"{row['rows_per_call']:9.1f} {row['loop_us']:7.0f} {row['server_us']:7.0f} {row['client_us']:7.0f} "
            f"{row['cpu_ratio']:6.2f} {row['idle']:5.0%}"
        )

    def find(server: str, protocol: str, concurrency: int, field: str = "throughput") -> float:
        return next(
            r[field] for r in rows if (r["server"], r["protocol"], r["concurrency"]) == (server, protocol, concurrency)
        )

    def tail(server: str, protocol: str, concurrency: int) -> float:
        return find(server, protocol, concurrency, "p99_ms") / find(server, protocol, concurrency, "p50_ms")

    batched_rest = find("batched", "rest", 64)
    summary = {
        "batched_rest_64_vs_limit": batched_rest / limit,
        "in_process_half_batches_vs_limit": half / limit,
        "batched_grpc_64_vs_limit": find("batched", "grpc", 64) / limit,
        "batched_grpc_64_vs_batched_rest_64": find("batched", "grpc", 64) / batched_rest,
        "batched_rest_64_p99_vs_p50": tail("batched", "rest", 64),
        "batched_grpc_64_p99_vs_p50": tail("batched", "grpc", 64),
        "batched_rest_64_loop_us_per_request": find("batched", "rest", 64, "loop_us"),
        "batched_grpc_64_loop_us_per_request": find("batched", "grpc", 64, "loop_us"),
        "batched_rest_64_cpu_ratio": find("batched", "rest", 64, "cpu_ratio"),
        "batched_grpc_64_cpu_ratio": find("batched", "grpc", 64, "cpu_ratio"),
        "batched_rest_64_vs_naive_64": batched_rest / find("naive", "rest", 64),
        "batched_rest_64_vs_unbatched_rest_64": batched_rest / find("unbatched", "rest", 64),
        "batched_grpc_64_vs_unbatched_grpc_64": find("batched", "grpc", 64) / find("unbatched", "grpc", 64),
        "errors": sum(r["errors"] for r in rows),
    }
    print("ratios:")
    for key, value in summary.items():
        print(f"  {key:40} {value:6.2f}" if key != "errors" else f"  {key:40} {value:6d}")
    for label, key in (("REST", "batched_rest_64_vs_limit"), ("gRPC", "batched_grpc_64_vs_limit")):
        verdict = "meets" if summary[key] >= 0.6 else "misses"
        print(f"  aim: batched {label} at concurrency 64 >= 0.6 x limit -> {verdict} ({summary[key]:.2f})")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short measurement windows (< 90 s)")
    parser.add_argument(
        "--overhead", action="store_true", help="also run half_plus_two (no compute: per-request overhead alone)"
    )
    parser.add_argument(
        "--model",
        choices=("cnn", "mlp"),
        default="cnn",
        help="cnn: compute-bound 16x16x4 image model (default); mlp: memory-bound MLP whose speed needs full batches",
    )
    parser.add_argument("--width", type=int, default=4096, help="hidden width of the MLP")
    parser.add_argument(
        "--batch-threads",
        type=int,
        default=1,
        help="num_batch_threads of the batched server (1: one TF call at a time, which may use every core)",
    )
    parser.add_argument(
        "--python-clients",
        action="store_true",
        help="use the Python load generator even when h2load is on PATH (to compare with earlier runs)",
    )
    parser.add_argument("--serve-host", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_host:
        serve_host(args.serve_host, args.batch_threads)
        return
    seconds, warmup = (1.2, 0.3) if args.quick else (2.5, 0.6)
    cores = os.cpu_count() or 1
    print(f"bench_serve: {cores} CPU cores, clients and servers share them; one example per request")
    h2load = None if args.python_clients else h2load_path()
    if h2load is not None:
        print(
            f"load generator: h2load ({h2load}) in its own process; REST: N HTTP/1.1 connections, gRPC: one HTTP/2 connection with N streams"
        )
    else:
        why = "--python-clients" if args.python_clients else "h2load not on PATH (apt-get install nghttp2-client)"
        print(
            f"load generator: Python clients in the benchmark process ({why}); REST: raw asyncio streams, gRPC: one grpc.aio channel"
        )
    with tempfile.TemporaryDirectory(prefix="bench_serve_") as tmp:
        root = Path(tmp)
        if args.model == "cnn":
            macs = write_cnn(root / "cnn", channels=64)
            example: object = [[[0.1] * 4] * 16] * 16
            note = f"CNN 16x16x4 -> 4 conv3x3x64 -> 10, {2 * macs / 1e6:.1f} MFLOP per example"
        else:
            macs = write_mlp(root / "mlp", width=args.width)
            example = [0.1] * FEATURES
            note = f"MLP {FEATURES}-{args.width}x3-10, {2 * macs / 1e6:.1f} MFLOP per example"
        benchmark_model(
            args.model,
            root / args.model,
            example,
            seconds=seconds,
            warmup=warmup,
            batch_threads=args.batch_threads,
            h2load=h2load,
            note=note,
        )
        if args.overhead:
            from tfpilot.serve.demo_models import write_half_plus_two

            # Almost no compute: this shows the per-request overhead of each server alone.
            write_half_plus_two(root / "tiny", 1)
            benchmark_model(
                "half_plus_two",
                root / "tiny",
                1.0,
                seconds=seconds,
                warmup=warmup,
                batch_threads=args.batch_threads,
                h2load=h2load,
                note="y = 0.5 x + 2, no compute: per-request overhead dominates",
            )


if __name__ == "__main__":
    main()
