"""NVML energy per call: refused clearly without a GPU, measured on one."""

from __future__ import annotations

import pytest
import torch

from kernelpro.harness.energy import EnergyUnavailable, measure_energy, unavailable


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_without_a_gpu_energy_is_unavailable_with_a_reason():
    assert "NVML" in unavailable()
    with pytest.raises(EnergyUnavailable):
        measure_energy(lambda: None, lambda: None)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_matmul_energy_per_call_and_power():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    reading = measure_energy(lambda: a @ a, torch.cuda.synchronize, min_seconds=1.0)
    assert reading.seconds >= 1.0 and reading.calls >= 8
    assert 0.05 < reading.joules_per_call < 20  # an 8192^3 bf16 product drew about 1.2 J on an H200
    assert 50 < reading.average_watts < 1500


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_judge_reports_energy_when_asked(settings):
    from kernelpro.harness.judge import judge
    from tests.conftest import candidate, problem

    settings.harness.energy = True
    result = judge(problem("matmul_relu"), candidate("honest_matmul_relu"), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert result.candidate.energy_j > 0 and result.reference.power_w > 0
