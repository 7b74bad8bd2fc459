"""The rest of tensorflow_model_server's flag surface, so existing launch scripts start.

`tfpilot serve` implements the flags that mean something for it as ordinary options (ports,
models, batching, warmup, timeouts, thread pools, TLS, gRPC channel arguments, load retries,
the gRPC Unix socket, --version). The flags below cannot apply here (no TPU or GPU, no
TFLite-in-server, ...): they are accepted and reported with a one-line notice, instead of
failing with "No such option" as a launch script or a Kubernetes manifest written for TF
Serving would otherwise. A flag that is not TF Serving's still exits 2 naming it.
"""

from __future__ import annotations

__all__ = ["ACCEPTED_FLAGS", "BOOLEAN_FLAGS", "strip_accepted_flags"]

# Flag -> why it has no effect in tfpilot serve. Booleans take no separate value argument.
ACCEPTED_FLAGS: dict[str, str] = {
    "num_unload_threads": "retiring a version drops one reference and returns at once (requests in flight finish on it), so there is no unload work to spread over threads",
    "flush_filesystem_caches": "no file-system caches to flush",
    "use_alts_credentials": "ALTS needs Google's infrastructure",
    "platform_config_file": "only the TensorFlow SavedModel platform is served",
    "prefer_tflite_model": "TFLite-in-server is not available here",
    "thread_pool_factory_config_file": "model calls use one thread pool",
    "mixed_precision": "a SavedModel runs in the precision it was exported with",
    "skip_initialize_tpu": "no TPU on this machine",
    "enable_per_model_batching_parameters": "one --batching_parameters_file applies to every model",
    "tensorflow_session_config_file": "sessions use TensorFlow's defaults and the parallelism flags",
    "per_process_gpu_memory_fraction": "no GPU on this machine",
    "remove_unused_fields_from_bundle_metagraph": "the MetaGraph is kept as loaded",
    "num_tflite_pools": "TFLite-in-server is not available here",
    "num_tflite_interpreters_per_pool": "TFLite-in-server is not available here",
    "xla_cpu_compilation_enabled": "the SavedModel runs as exported",
    "xla_gpu_compilation_enabled": "no GPU on this machine",
    "enable_serialization_as_tensor_content": "responses use typed value fields",
}
BOOLEAN_FLAGS = {
    "flush_filesystem_caches",
    "use_alts_credentials",
    "prefer_tflite_model",
    "skip_initialize_tpu",
    "enable_per_model_batching_parameters",
    "remove_unused_fields_from_bundle_metagraph",
    "xla_cpu_compilation_enabled",
    "xla_gpu_compilation_enabled",
    "enable_serialization_as_tensor_content",
}


def _flag_name(arg: str) -> str | None:
    """`--num_load_threads=4` / `-num_load_threads` -> `num_load_threads` (absl takes one or two dashes)."""
    if not arg.startswith("-") or arg in ("-", "--"):
        return None
    name = arg.lstrip("-").partition("=")[0]
    if name.startswith("no") and name[2:] in BOOLEAN_FLAGS:
        return name[2:]
    return name


def strip_accepted_flags(args: list[str]) -> tuple[list[str], list[str]]:
    """Remove accepted-but-inapplicable flags (and their values); return (rest, notices)."""
    rest: list[str] = []
    notices: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        name = _flag_name(arg)
        if name in ACCEPTED_FLAGS:
            takes_value = name not in BOOLEAN_FLAGS and "=" not in arg
            if takes_value and index + 1 < len(args):
                index += 1  # `--flag value`
            notices.append(
                f"notice: --{name} is accepted for TF Serving compatibility and has no effect: {ACCEPTED_FLAGS[name]}"
            )
            index += 1
            continue
        rest.append(arg)
        index += 1
    return rest, notices
