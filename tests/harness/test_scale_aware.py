"""Outputs far smaller than atol compared at their own scale: a softmax over a long row, all of its outputs
inside atol=1e-4 of zero, is judged like any problem; an output that is only rounding stays a constant one."""

from __future__ import annotations

import pytest
import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness.guards.compare import Agreement, Mismatch, atol_at_scale, compare_outputs
from kernelpro.harness.guards.problem_checks import check_reference
from kernelpro.harness.judge import judge
from tests.conftest import candidate, problem

TOL = HarnessSettings().tolerances


def long_softmax(seed: int, columns: int = 393216) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.rand(4, columns, generator=generator), dim=1)


@pytest.mark.parametrize("name", ["zeros", "uniform", "permuted", "other inputs"])
def test_a_tiny_output_is_compared_at_its_own_scale(name):
    ref = long_softmax(0)
    wrong = {"zeros": torch.zeros_like(ref), "uniform": torch.full_like(ref, 1 / ref.shape[1]),
             "permuted": ref[:, torch.randperm(ref.shape[1])], "other inputs": long_softmax(1)}[name]
    assert float(ref.abs().max()) < TOL["float32"].atol  # every value, and every error, inside atol
    outcome = compare_outputs(ref, wrong, TOL)
    assert isinstance(outcome, Mismatch) and outcome.reason == "value_mismatch", outcome
    assert "at this output's scale" in outcome.message


def test_honest_float32_rounding_of_a_tiny_output_still_passes():
    """Another order of sums and exp in float64 rounded back: each output a few units in the last place off."""
    x = torch.rand(4, 393216, generator=torch.Generator().manual_seed(2))
    ref = torch.softmax(x, dim=1)
    e = (x - x.amax(dim=1, keepdim=True)).double().exp().float()
    blocked = e / e.reshape(4, -1, 256).sum(dim=2).sum(dim=1, keepdim=True)
    assert not torch.equal(blocked, ref)
    assert isinstance(compare_outputs(ref, blocked, TOL), Agreement)


def test_atol_comes_down_to_the_scale_never_up_and_not_below_the_dtypes_smallest_normal():
    assert atol_at_scale(1e-4, 5.0, torch.float32) == 1e-4
    assert atol_at_scale(1e-4, 2.5e-6, torch.float32) == pytest.approx(2.5e-10)
    assert atol_at_scale(1e-4, 0.0, torch.float32) == torch.finfo(torch.float32).tiny
    assert atol_at_scale(1e-2, 1e-5, torch.float16) == torch.finfo(torch.float16).tiny


def test_a_zero_reference_still_agrees_with_a_subnormal_flushed_to_zero():
    ref = torch.zeros(8)
    assert isinstance(compare_outputs(ref, torch.full((8,), 1e-40), TOL), Agreement)


def _judged_alike(draw):
    """The problem check on outputs given by ``draw(seed, scale)``, the first set being seed 0."""
    first = draw(0, None)
    return check_reference(first, draw, [(1, None), (2, None), (3, 8.0)], HarnessSettings(),
                           nudged=lambda scale: draw(0, scale))[0]


def test_a_long_softmax_is_not_a_constant_problem():
    def draw(seed, scale):
        x = torch.rand(4, 393216, generator=torch.Generator().manual_seed(seed))
        return torch.softmax(x * (scale or 1.0), dim=1)

    assert _judged_alike(draw) == []


def test_an_output_that_is_only_rounding_is_a_constant_problem():
    """Zero in exact arithmetic, its float32 rounding different for every input set: no input moves it more than
    a nudge of the same inputs does."""
    norm = torch.nn.GroupNorm(8, 32)

    def draw(seed, scale):
        x = torch.randn(16, 32, 16, 16, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            return norm(x * (scale or 1.0)).mean(dim=[1, 2, 3])

    assert [f.reason for f in _judged_alike(draw)] == ["constant_output"]


def test_judged_like_any_problem_an_honest_softmax_over_long_rows_passes(settings):
    result = judge(problem("softmax_long_rows"), candidate("honest_softmax_long_rows"), device="cpu",
                   settings=settings, timing=False)
    assert result.status == "ok", result.message
    assert result.problem_findings == [], result.problem_findings


@pytest.mark.parametrize("name", ["cheat_zeros_tiny", "cheat_uniform_softmax"])
def test_zeros_or_the_rows_mean_for_a_softmax_over_long_rows_are_wrong_values(name, settings):
    result = judge(problem("softmax_long_rows"), candidate(name), device="cpu", settings=settings, timing=False)
    assert (result.status, result.reason) == ("incorrect", "value_mismatch"), result.message


def test_an_honest_candidate_on_a_rounding_only_output_passes_and_the_problem_is_constant(settings):
    """Its rounding differs from the reference's: the reference's own distance from float64 is allowed for."""
    result = judge(problem("group_norm_mean"), candidate("honest_group_norm_mean"), device="cpu",
                   settings=settings, timing=False)
    assert result.status == "ok", result.message
    assert [f.reason for f in result.problem_findings] == ["constant_output"]
