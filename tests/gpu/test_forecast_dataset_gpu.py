"""A judged candidate on a real GPU becomes a dataset row with the GPU's name, the problem's compulsory bytes and
the roofline headroom the model-free forecaster is bounded by."""

from __future__ import annotations

import pytest
import torch

from kernelpro.forecast.dataset import hardware_name, row_for
from kernelpro.forecast.evaluate import inputs_for
from kernelpro.harness.judge import judge
from tests.conftest import candidate, problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]


def test_a_cuda_verdict_makes_a_row_with_bytes_and_headroom(settings):
    reference = problem("scale_relu")
    result = judge(reference, candidate("honest_cuda_scale_relu"), device="cuda", settings=settings)
    row = row_for(reference, candidate("honest_cuda_scale_relu"), result, hardware_name("cuda"), "test")
    assert result.status == "ok" and row.speed_class >= 1 and row.hardware.startswith("NVIDIA")
    assert row.traffic_bytes and row.traffic_bytes > 0 and row.reference_ms > 0
    headroom = inputs_for(row).headroom()
    assert headroom is None or headroom > 0  # None only for a GPU the specs table does not know
