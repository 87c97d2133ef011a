"""Whether a CUDA worker gets its own root and the socket filter is decided by a confined child that starts CUDA."""

from __future__ import annotations

import pytest
import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.isolation import cuda_walls


def test_cpu_workers_and_unisolated_ones_carry_nothing():
    assert cuda_walls.cuda_confinement("cpu", HarnessSettings(), []) == {}
    assert cuda_walls.cuda_confinement("cuda", HarnessSettings(isolate=False), []) == {}


@pytest.mark.skipif(torch.cuda.is_available(), reason="here CUDA starts: the GPU tests check the walls it gets")
def test_where_cuda_cannot_start_behind_the_walls_the_worker_is_told_why(tmp_path):
    cuda_walls._probe.cache_clear()
    carried = cuda_walls.cuda_confinement("cuda", HarnessSettings(), [str(tmp_path)])
    assert carried["cuda_confine"] is False
    assert "CUDA does not start behind them" in carried["cuda_confine_why"], carried
    # asked once per process: the answer is kept
    assert cuda_walls.cuda_confinement("cuda", HarnessSettings(), [str(tmp_path)]) == carried
    assert cuda_walls._probe.cache_info().misses == 1
