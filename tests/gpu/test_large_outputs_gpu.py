"""KernelBench's own sizes for level 1's ReLU (4096 x 393216 float32: 6 GiB an input, 6 GiB an output), judged
in full on CUDA. Each float64 check upcast whole outputs, and the judgment ran an H200 out of memory
(``gpu_out_of_memory``, 122 GiB held); checked a slice at a time, an honest candidate passes and a wrong one is
still found."""

from __future__ import annotations

import pytest
import torch

from kernelpro.harness.pipeline import Pipeline
from kernelpro.problem import parse_problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]

ROWS, COLUMNS = 4096, 393216
NEEDED = 60 * 2**30  # what the judgment of one 6 GiB input and output now takes at most, with room


def _module(cls: str, body: str) -> str:
    return f"""import torch
import torch.nn as nn


class {cls}(nn.Module):
    def forward(self, x):
        {body}
"""


def test_a_6_gib_relu_is_judged_on_cuda(settings):
    if torch.cuda.get_device_properties(0).total_memory < 1.5 * NEEDED:
        pytest.skip("needs a GPU of at least 90 GiB")
    problem = parse_problem(_module("Model", "return torch.relu(x)") + f"""

def get_inputs():
    return [torch.randn({ROWS}, {COLUMNS})]


def get_init_inputs():
    return []
""", "relu_kernelbench_size")
    honest = _module("ModelNew", "return torch.clamp_min(x, 0.0)")
    wrong = _module("ModelNew", "out = torch.relu(x)\n        out[-1, -1] += 1.0\n        return out")
    with Pipeline("cuda", settings) as pipeline:
        good, bad = pipeline.judge([(problem, honest), (problem, wrong)])
    assert good.status == "ok", good.message
    assert good.speedup is not None
    assert (bad.status, bad.reason) == ("incorrect", "value_mismatch"), bad.message
    assert f"first at [{ROWS - 1}, {COLUMNS - 1}]" in bad.message
