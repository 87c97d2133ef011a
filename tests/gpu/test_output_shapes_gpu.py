"""Every output shape KernelBench uses, judged on CUDA: a loss's 0-dimensional output, a 1-element one, a
non-contiguous view, half precision. Each problem gets an honest candidate (must pass) and one that is off by a
constant (must be ``incorrect``): the mismatch path is where a byte view of a 0-dimensional tensor used to fail
the judge itself (``worker_error``: "self.dim() cannot be 0 to view Float as Byte")."""

from __future__ import annotations

import pytest
import torch

from kernelpro.harness.pipeline import Pipeline
from kernelpro.problem import parse_problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]

# name: (forward body over inputs a, b, c; get_inputs body), shaped like KernelBench level 1's loss problems
PROBLEMS = {
    "cross_entropy_0dim": ("return torch.nn.functional.cross_entropy(a, b)",
                           "return [torch.randn(128, 10), torch.randint(0, 10, (128,))]"),
    "huber_0dim": ("return torch.nn.functional.smooth_l1_loss(a, b)",
                   "return [torch.randn(128, 4096), torch.randn(128, 4096)]"),
    "kl_div_0dim": ("return torch.nn.functional.kl_div(torch.log(a), b, reduction='batchmean')",
                    "return [torch.randn(128, 4096).softmax(dim=-1), torch.randn(128, 4096).softmax(dim=-1)]"),
    "triplet_margin_0dim": ("return torch.nn.functional.triplet_margin_loss(a, b, c, margin=1.0)",
                            "return [torch.randn(128, 4096), torch.randn(128, 4096), torch.randn(128, 4096)]"),
    "hinge_0dim": ("return torch.mean(torch.clamp(1 - a * b, min=0))",
                   "return [torch.randn(128, 1), torch.randint(0, 2, (128, 1)).float() * 2 - 1]"),
    "sum_1_element": ("return a.sum(dim=(0, 1)).reshape(1)", "return [torch.randn(64, 64)]"),
    "transpose_non_contiguous": ("return (a @ b).t()", "return [torch.randn(256, 128), torch.randn(128, 64)]"),
    "matmul_fp16": ("return a @ b", "return [torch.randn(256, 256).half(), torch.randn(256, 256).half()]"),
    "mean_fp16_0dim": ("return a.float().mean().half()", "return [torch.randn(4096).half()]"),
}


def _source(cls: str, body: str) -> str:
    return f"""import torch
import torch.nn as nn


class {cls}(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, *args):
        a, b, c = (list(args) + [None, None])[:3]
        {body}
"""


def reference(name: str):
    body, inputs = PROBLEMS[name]
    return parse_problem(_source("Model", body) + f"\n\ndef get_inputs():\n    {inputs}\n\n\n"
                         "def get_init_inputs():\n    return []\n", name)


def honest(name: str) -> str:
    return _source("ModelNew", PROBLEMS[name][0])


def off_by_a_constant(name: str) -> str:
    body = PROBLEMS[name][0].replace("return ", "out = ", 1)
    return _source("ModelNew", body + "\n        return out + 0.25")


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_every_output_shape_is_judged_on_cuda(name, settings):
    with Pipeline("cuda", settings) as pipeline:
        good, bad = pipeline.judge([(reference(name), honest(name)), (reference(name), off_by_a_constant(name))],
                                   timing=False)
    assert good.status == "ok", good.message
    assert (bad.status, bad.reason) == ("incorrect", "value_mismatch"), bad.message


def test_output_shapes_are_timed_on_cuda(settings):
    """The timed calls' checks (fingerprints, comparisons) over the same shapes."""
    names = ["cross_entropy_0dim", "sum_1_element", "transpose_non_contiguous", "mean_fp16_0dim"]
    with Pipeline("cuda", settings) as pipeline:
        results = pipeline.judge([(reference(n), honest(n)) for n in names])
    for name, result in zip(names, results, strict=True):
        assert result.status == "ok", f"{name}: {result.message}"
        assert result.speedup is not None
