"""A reference that rounds coarsely (here bfloat16 autocast on the CPU, as TF32 convolutions do on a GPU) widens
the comparison by its own error against float64, and no further."""

from __future__ import annotations

from kernelpro.harness.judge import judge_many
from kernelpro.problem import parse_problem

COARSE_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.lin = nn.Linear(features, features)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):  # float32 inputs only: the float64 oracle stays exact
            return self.lin(x).float()


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return [256]
'''

CANDIDATE = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.lin = nn.Linear(features, features)

    def forward(self, x):
        {body}
'''

EXACT = "return self.lin(x)"  # float32 throughout: closer to the truth than the reference
ONE_ROW_WRONG = "y = self.lin(x)\n        y[3] = y[3] * 1.05\n        return y"
COARSER = "return self.lin(x.bfloat16().float().round(decimals=1))"  # rounds its inputs far beyond bfloat16


def test_the_reference_rounding_is_allowed_for_and_real_errors_are_not(settings):
    problem = parse_problem(COARSE_REFERENCE, name="coarse_linear")
    sources = [CANDIDATE.format(body=body) for body in (EXACT, ONE_ROW_WRONG, COARSER)]
    exact, one_row, coarser = judge_many(problem, sources, device="cpu", settings=settings)

    assert exact.status == "ok", exact.message
    noise = exact.details["reference_noise"]["output"]
    assert 1e-4 < noise < 1e-2  # bfloat16's rounding, measured against the float64 oracle
    assert (one_row.status, one_row.reason) == ("incorrect", "value_mismatch")
    assert "the reference itself is that far from float64" in one_row.message
    assert coarser.status == "incorrect" and coarser.reason == "value_mismatch", coarser.message


def test_an_exact_reference_gives_no_allowance(settings):
    exact_reference = COARSE_REFERENCE.replace('with torch.autocast("cpu", dtype=torch.bfloat16):', "if True:")
    [result] = judge_many(parse_problem(exact_reference, name="linear"), [CANDIDATE.format(body=EXACT)],
                          device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert result.details.get("reference_noise", {}).get("output", 0.0) < 1e-6
