"""NVML energy per call: refused clearly without a GPU, measured on one."""

from __future__ import annotations

import pytest
import torch

from kernelpro.harness.timing.energy import EnergyUnavailable, measure_energy, unavailable


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_without_a_gpu_energy_is_unavailable_with_a_reason():
    assert "NVML" in unavailable()
    with pytest.raises(EnergyUnavailable):
        measure_energy(lambda: None, lambda: None)


@pytest.mark.gpu_exclusive
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_matmul_energy_per_call_and_power():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    reading = measure_energy(lambda: a @ a, torch.cuda.synchronize, min_seconds=1.0)
    assert reading.seconds >= 1.0 and reading.calls >= 8
    assert 0.05 < reading.joules_per_call < 20  # an 8192^3 bf16 product drew about 1.2 J on an H200
    assert 50 < reading.average_watts < 1500
    assert reading.sm_clock_mhz and reading.sm_clock_mhz > 100 and reading.temperature_c is not None
    assert reading.power_limit_w and reading.power_limit_w > 100 and isinstance(reading.capped, list)


@pytest.mark.gpu_exclusive
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_judge_reports_energy_when_asked(settings):
    from kernelpro.harness.judge import judge
    from tests.conftest import candidate, problem

    settings.harness.energy = True
    result = judge(problem("matmul_relu"), candidate("honest_matmul_relu"), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert result.candidate.energy_j > 0 and result.reference.power_w > 0
    low, high = result.energy_ci95
    # as fast or faster (1.06x on an H200, where it also drew 1.30x less energy): never more energy
    assert low <= result.energy_ratio <= high and result.energy_verdict in {"less", "same", "uncertain"}
    details = result.details["energy"]
    assert details["repeats"] == settings.harness.energy_repeats
    assert len(details["readings"]["candidate"]) == settings.harness.energy_repeats
    assert all(r["seconds"] >= settings.harness.energy_seconds for r in details["readings"]["reference"])


@pytest.mark.gpu_exclusive
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_a_candidate_doing_its_work_twice_uses_more_energy(settings):
    from kernelpro.harness.judge import judge
    from tests.conftest import candidate, problem

    settings.harness.energy = True
    source = candidate("honest_matmul_relu")
    extra = "        torch.addmm(self.linear.bias, x, self.linear.weight.t())\n"
    twice = source.replace("    def forward(self, x):\n", "    def forward(self, x):\n" + extra)
    assert twice != source
    result = judge(problem("matmul_relu"), twice, device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert result.energy_verdict == "more" and result.energy_ci95[1] < 1.0
