from __future__ import annotations

import pytest
import torch

from kernelpro.profiling.gpu_specs import detect, lookup, merge_device_readings


@pytest.mark.parametrize(("name", "expected"), [
    ("NVIDIA H200", "NVIDIA H200"), ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"), ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4"),
    ("NVIDIA L40S", "NVIDIA L40S"), ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"),
])
def test_lookup_matches_device_names(name, expected):
    assert lookup(name).name == expected


def test_h200_ridge_points_match_the_datasheet():
    h200 = lookup("NVIDIA H200")
    assert h200.ridge_point("fp32") == pytest.approx(13.9, abs=0.1)
    assert h200.ridge_point("bf16_tensor") == pytest.approx(206, abs=1)
    assert h200.ridge_point("fp8_e5m2") is None
    text = h200.render()
    assert "132 SMs" in text and "4.80 TB/s" in text and "228 KiB/SM" in text and len(text) < 600


def test_device_readings_override_the_table():
    merged = merge_device_readings("NVIDIA H200", {"max_sm_clock_mhz": 1755.0, "memory_bandwidth_gbs": 4915.2,
                                                   "sm_count": 132})
    assert merged.max_sm_clock_mhz == 1755.0 and merged.memory_bandwidth_gbs == 4915.2
    assert merged.source == "device+table" and merged.peak_tflops["bf16_tensor"] == pytest.approx(989.4)


def test_unknown_gpu_gets_an_estimated_fp32_peak_only():
    merged = merge_device_readings("NVIDIA Future 9000", {"compute_capability": (9, 0), "sm_count": 100,
                                                          "max_sm_clock_mhz": 2000.0, "memory_bandwidth_gbs": 3000.0})
    assert merged.source == "estimated"
    assert merged.peak_tflops == {"fp32": pytest.approx(51.2)}
    assert merged.ridge_point("fp32") == pytest.approx(51.2e12 / 3e12, rel=1e-3)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_detect_reads_the_device():
    specs = detect()
    assert specs.sm_count > 0 and specs.memory_bandwidth_gbs > 100 and specs.l2_bytes > 0
    if "H200" in specs.name:
        assert specs.sm_count == 132 and 4500 < specs.memory_bandwidth_gbs < 5200
