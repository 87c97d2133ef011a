"""The precision guard's arithmetic on its own: float64 oracle, reference error, candidate error."""

from __future__ import annotations

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.guards.precision import judge_precision, oracle_outputs


def softmax_case():
    x = 0.05 * torch.randn(4, 4096)
    model = torch.nn.Softmax(dim=-1)
    return model, x, model(x), oracle_outputs(model, [x])


def test_float32_recomputation_passes():
    model, x, ref, oracle = softmax_case()
    shifted = (x - x.amax(-1, keepdim=True)).exp()
    assert judge_precision(shifted / shifted.sum(-1, keepdim=True), ref, oracle, HarnessSettings()) is None


def test_bfloat16_arithmetic_is_rejected_and_zeros_are_incorrect():
    model, x, ref, oracle = softmax_case()
    status, message = judge_precision(model(x.bfloat16()).float(), ref, oracle, HarnessSettings())
    assert status == "rejected" and "float64 oracle" in message
    status, _ = judge_precision(torch.zeros_like(ref), ref, oracle, HarnessSettings())
    assert status == "incorrect"


def test_looser_tolerance_admits_lower_precision():
    model, x, ref, oracle = softmax_case()
    loose = HarnessSettings()
    loose.tolerances["float32"].rtol = 1e-2
    assert judge_precision(model(x.bfloat16()).float(), ref, oracle, loose) is None


def test_non_float_outputs_are_skipped():
    idx = torch.arange(10)
    assert judge_precision((idx,), (idx,), (idx,), HarnessSettings()) is None
