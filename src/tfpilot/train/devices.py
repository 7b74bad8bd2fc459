"""A GPU the machine has but TensorFlow cannot use, said as a finding rather than a C++ log line.

TensorFlow says it only in start-up lines that tfpilot hides by default (cli/quiet.py): "Could
not find cuda drivers", "failed call to cuInit", "Cannot dlopen some GPU libraries". On a CPU
machine those lines are noise; on a machine with an NVIDIA GPU they mean training silently runs
on the CPU, which is worth one line in the findings. The hardware is seen from the files the
NVIDIA kernel driver creates, so nothing is imported or run to look.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence

from tfpilot.findings import Finding, Severity

__all__ = ["nvidia_devices", "unusable_gpu_finding"]


def nvidia_devices() -> list[str]:
    """The NVIDIA GPU device files of this machine (/dev/nvidia0 ...), or []."""
    return sorted(path for path in glob.glob("/dev/nvidia[0-9]*") if os.path.basename(path)[6:].isdigit())


def unusable_gpu_finding(
    *, devices: Sequence[str], visible_gpus: int, built_with_cuda: bool, location: str
) -> Finding | None:
    """A warning when the machine has GPUs (`devices`) and TensorFlow sees none of them."""
    if not devices or visible_gpus:
        return None
    if not built_with_cuda:
        why = "this TensorFlow build has no CUDA support"
        fix = "install the CUDA build: pip install 'tensorflow[and-cuda]==2.21.*' (Linux), then check `nvidia-smi`"
    elif os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        why = f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r} hides them"
        fix = "unset CUDA_VISIBLE_DEVICES (or list the GPUs to use)"
    else:
        why = "the CUDA libraries or the driver did not load (run with --debug to see TensorFlow's own lines)"
        fix = "check `nvidia-smi` and that the driver supports the CUDA version TensorFlow 2.21 was built with"
    return Finding(
        code="ENV-GPU-UNUSED",
        severity=Severity.WARNING,
        title="A GPU is present but TensorFlow cannot use it",
        message=f"this machine has {len(devices)} NVIDIA GPU(s) ({', '.join(devices)}) and TensorFlow sees none: "
        f"{why}; training runs on the CPU",
        location=location,
        evidence={"devices": list(devices), "visible_gpus": visible_gpus, "built_with_cuda": built_with_cuda},
        fix=fix,
    )
