"""Timed calls' outputs checked at sampled positions: drawn afresh for every call by the judge's own generator,
the same for every fingerprint, never for an output no larger than the sample; a sample that disagrees sends
the whole output to the comparison that decides. Real judgments on the CPU: an honest candidate passes, one that
leaves part of its output stale in the timed calls only is caught there."""

from __future__ import annotations

import torch

from kernelpro.config import Settings
from kernelpro.harness.guards.compare import Agreement, Mismatch, compare_outputs, fingerprint
from kernelpro.harness.guards.timed_checks import SampledPositions, TimedCallChecks
from kernelpro.harness.judge import judge
from tests.conftest import candidate, problem

TOLERANCES = Settings().harness.tolerances


def test_positions_are_fresh_for_each_comparison_fixed_for_fingerprints_and_only_for_larger_outputs():
    positions = SampledPositions(64)
    big = torch.zeros(10_000)
    first, second = positions.fresh(big), positions.fresh(big)
    assert first.shape == (64,) and not torch.equal(first, second)
    assert int(first.max()) < big.numel() and int(first.min()) >= 0
    assert torch.equal(positions.fixed(big), positions.fixed(big))
    assert positions.fresh(torch.zeros(64)) is None and positions.sampled == 2
    torch.manual_seed(0)  # what a candidate may do: the judge's draws do not follow the global generator
    after_seed = positions.fresh(big)
    torch.manual_seed(0)
    assert not torch.equal(after_seed, positions.fresh(big))
    assert SampledPositions(0).fresh(big) is None


def test_a_sample_sees_a_share_of_wrong_elements_and_whole_tensor_checks_still_apply():
    ref = torch.randn(100_000)
    stale = ref.clone()
    stale[-2_000:] = 0.0  # 2 % left unwritten
    sample = SampledPositions(4_096).fresh
    assert isinstance(compare_outputs(ref, ref.clone(), TOLERANCES, sample=sample), Agreement)
    assert isinstance(compare_outputs(ref, stale, TOLERANCES, sample=sample), Mismatch)
    wrong_shape = compare_outputs(ref, ref[:-1].clone(), TOLERANCES, sample=sample)
    assert isinstance(wrong_shape, Mismatch) and wrong_shape.reason == "shape_mismatch"
    transposed = torch.randn(400, 250).t()  # not contiguous: sampled where it lies, as its flat row would be
    assert isinstance(compare_outputs(transposed.contiguous(), transposed, TOLERANCES, sample=sample), Agreement)
    fixed = SampledPositions(64).fixed
    assert fingerprint(ref, fixed) == fingerprint(ref.clone(), fixed) != fingerprint(ref + 1, fixed)


def test_a_sample_that_disagrees_leaves_the_verdict_to_the_whole_output():
    mismatches = []
    checks = TimedCallChecks(TOLERANCES, {}, lambda: None, lambda *a: None,
                             lambda outcome, *rest: mismatches.append(outcome), lambda out: True,
                             sampled_elements=1_000)
    ref = torch.randn(50_000)
    checks("reference", 0, ref)
    wrong = ref.clone()
    wrong[::7] += 1.0
    checks("candidate", 0, wrong)
    [outcome] = mismatches
    assert outcome.reason == "value_mismatch" and f"{len(range(0, 50_000, 7))} of 50000 elements" in outcome.message
    assert checks.checked == 1 and checks.positions.sampled == 1


def test_earlier_rounds_are_kept_by_their_sampled_values_and_a_replay_of_one_is_still_named():
    replays, mismatches = [], []
    checks = TimedCallChecks(TOLERANCES, {}, lambda: None, lambda *pair: replays.append(pair),
                             lambda outcome, *rest: mismatches.append(outcome), lambda out: True,
                             sampled_elements=1_000)
    refs = [torch.randn(50_000) for _ in range(3)]
    checks("reference", 0, refs[0])
    checks("candidate", 0, refs[0] + 1e-7)  # right, but not the very values: its fingerprint is its own
    checks("candidate", 1, refs[1].clone())  # the candidate first this round: checked when its reference comes
    checks("reference", 1, refs[1])
    [kept] = checks.expected[0]  # round 0 is done: 1,000 values of it are kept, not 50,000
    assert kept.shape == (1_000,) and checks.expected[1] is refs[1]
    checks("reference", 2, refs[2])
    checks("candidate", 2, refs[0].clone())  # the reference's output for round 0's inputs
    assert replays == [(2, 0)] and len(mismatches) == 1


STALE_IN_TIMED_CALLS = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Whole outputs while it may be checked element by element; in the timed calls, its last row left unwritten."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls <= 12:
            return torch.relu(x) * self.scale
        out = torch.empty_like(x)
        out[:-1] = torch.relu(x[:-1]) * self.scale
        return out
'''


def test_sampled_timed_checks_pass_an_honest_candidate_and_catch_one_stale_in_the_timed_calls(settings):
    settings.harness.timed_check_elements = 512  # scale_relu's 8,192 elements are then sampled
    settings.harness.min_timing_trials = settings.harness.timing_trials = 20
    settings.harness.timing_budget_s = 30
    honest = judge(problem("scale_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings)
    assert honest.status == "ok" and honest.correct, honest.message
    timing = honest.details["timing"]
    assert timing["outputs_sampled"] == timing["outputs_checked"] >= 20
    stale = judge(problem("scale_relu"), STALE_IN_TIMED_CALLS, device="cpu", settings=settings)
    assert stale.status in ("incorrect", "rejected") and "timed call" in stale.message, stale.message
    assert "timing" in stale.details["phase_s"]  # passed the correctness trials, caught while timed
