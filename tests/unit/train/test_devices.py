"""ENV-GPU-UNUSED: a GPU the machine has but TensorFlow cannot use is a finding, not a hidden log line."""

from __future__ import annotations

from tfpilot.train.devices import unusable_gpu_finding


def test_no_finding_without_gpus_or_when_tensorflow_uses_them():
    assert unusable_gpu_finding(devices=[], visible_gpus=0, built_with_cuda=True, location="r") is None
    assert unusable_gpu_finding(devices=["/dev/nvidia0"], visible_gpus=1, built_with_cuda=True, location="r") is None


def test_present_but_unusable_names_the_cause_and_the_fix(monkeypatch):
    cpu_build = unusable_gpu_finding(devices=["/dev/nvidia0"], visible_gpus=0, built_with_cuda=False, location="r")
    assert cpu_build is not None and cpu_build.code == "ENV-GPU-UNUSED" and cpu_build.severity.value == "warning"
    assert "no CUDA support" in cpu_build.message and "tensorflow[and-cuda]" in cpu_build.fix
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    hidden = unusable_gpu_finding(
        devices=["/dev/nvidia0", "/dev/nvidia1"], visible_gpus=0, built_with_cuda=True, location="r"
    )
    assert hidden is not None and "2 NVIDIA GPU(s)" in hidden.message and "CUDA_VISIBLE_DEVICES" in hidden.fix
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    driver = unusable_gpu_finding(devices=["/dev/nvidia0"], visible_gpus=0, built_with_cuda=True, location="r")
    assert driver is not None and "did not load" in driver.message
