"""Keep TensorFlow's native start-up lines off the terminal, so a person sees tfpilot's own.

TF_CPP_MIN_LOG_LEVEL does not reach them: TensorFlow 2.21 logs through absl, and what it logs
before absl is initialised ("WARNING: All log messages before absl::InitializeLog() ...", the
oneDNN notice, "Could not find cuda drivers", `E0000 ... failed call to cuInit ... (303)` on a
machine without a GPU) goes straight to file descriptor 2. So the command line routes fd 2
through a pipe and drops exactly those lines; everything else (Python warnings, tfpilot's
errors, other native messages) passes through unchanged and in order.

`--debug` or TFPILOT_TF_LOGS=1 leaves stderr alone.
"""

from __future__ import annotations

import os
import re
import sys
import threading

__all__ = ["NOISE", "QuietStderr", "is_noise"]

# Native lines that say nothing a tfpilot user can act on, on a CPU machine or anywhere.
NOISE = re.compile(
    r"^(?:"
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|[IWE]\d{4} [\d:.]+\s+\d+ (?:port|cudart_stub|cuda_platform|cuda_executor|cuda_diagnostics|cpu_feature_guard"
    r"|cuda_dnn|cuda_fft|cuda_blas|gpu_device|gpu_timer)\.cc:\d+\]"
    r"|To enable the following instructions: .* in other operations, rebuild TensorFlow"
    r")"
)


def is_noise(line: str) -> bool:
    return bool(NOISE.match(line))


class QuietStderr:
    """Filter fd 2 for the life of the command (a reader thread forwards all but NOISE)."""

    def __init__(self) -> None:
        self._saved: int | None = None
        self._thread: threading.Thread | None = None
        self._write_end: int | None = None

    def start(self) -> None:
        try:
            sys.stderr.flush()
            read_end, write_end = os.pipe()
            self._saved = os.dup(2)
            os.dup2(write_end, 2)
            os.close(write_end)
        except OSError:
            return  # no fd 2 to filter (embedded use): leave it as it is
        self._thread = threading.Thread(target=self._forward, args=(read_end,), daemon=True, name="tfpilot-stderr")
        self._thread.start()

    def _forward(self, read_end: int) -> None:
        assert self._saved is not None
        pending = b""
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                kept = [line for line in lines if not is_noise(line.decode("utf-8", "replace"))]
                if kept:
                    os.write(self._saved, b"\n".join(kept) + b"\n")
        if pending and not is_noise(pending.decode("utf-8", "replace")):
            os.write(self._saved, pending)

    def stop(self) -> None:
        """Put fd 2 back and wait until everything written so far has been forwarded."""
        if self._saved is None or self._thread is None:
            return
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(self._saved, 2)  # closes the pipe's last write end held by this process
        self._thread.join(timeout=5)
        os.close(self._saved)
        self._saved = None
