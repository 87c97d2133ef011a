"""Which GPU's NVML counter an energy reading reads: the CUDA device's, under any ``CUDA_VISIBLE_DEVICES``."""

from __future__ import annotations

from kernelpro.harness.timing.energy import nvml_index


def test_a_lanes_cuda_device_zero_is_the_physical_gpu_it_was_given(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5")
    assert nvml_index(0) == 5
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,7")
    assert nvml_index(1) == 7


def test_without_a_visible_list_the_indices_agree(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert nvml_index(0) == 0 and nvml_index(3) == 3
