"""``harness.correctness_profile = "kernelbench"``: KernelBench's own check, torch.allclose at atol=rtol=1e-4 (1e-2 for
half types) on five fresh input sets and nothing more, chosen with ``--correctness kernelbench`` and named in the
verdict."""

from __future__ import annotations

import json

import torch
from typer.testing import CliRunner

from kernelpro.cli import app
from kernelpro.config import HarnessSettings
from kernelpro.harness.guards.compare import Agreement, Mismatch, compare_outputs
from kernelpro.harness.judge import judge
from kernelpro.harness.judge_values import frozen_noise, judge_limits
from tests.conftest import DATA, candidate, problem

KERNELBENCH = judge_limits(HarnessSettings(correctness_profile="kernelbench")).tolerances


def test_the_profile_fixes_kernelbenchs_five_plain_input_sets():
    harness = HarnessSettings(correctness_profile="kernelbench", correctness_trials=2, scaled_trials=3)
    assert (harness.correctness_trials, harness.scaled_trials, harness.shifted_trials) == (5, 0, 0)
    assert HarnessSettings.model_validate(harness.model_dump(mode="json")).correctness_trials == 5  # as a job
    assert HarnessSettings().correctness_trials == 3


def test_it_is_allclose_as_kernelbench_calls_it_rtol_of_the_candidates_magnitude():
    """``allclose(output, ref)``: ``|ref - cand| <= t + t * |cand|``, t = 1e-4 for float32 and 1e-2 for half
    types, as KernelBench's evaluator sets it per precision."""
    for dtype, t in ((torch.float32, 1e-4), (torch.float16, 1e-2), (torch.bfloat16, 1e-2)):
        assert KERNELBENCH[str(dtype).removeprefix("torch.")].atol == t
        ref = torch.ones(4, dtype=torch.float64)
        above, below = ref * (1 + 2.01 * t), ref * (1 - 1.99 * t)  # inside only by the candidate's magnitude
        for cand in (above, below):
            expected = torch.allclose(ref.to(dtype), cand.to(dtype), atol=t, rtol=t)
            got = compare_outputs(ref.to(dtype), cand.to(dtype), KERNELBENCH)
            assert isinstance(got, Agreement) is expected, (dtype, cand)
        assert isinstance(compare_outputs(ref.to(dtype), (ref * (1 + 3 * t)).to(dtype), KERNELBENCH), Mismatch)
    assert KERNELBENCH["float32"].atol == KERNELBENCH["float32"].rtol == 1e-4
    assert KERNELBENCH["float64"].atol == 1e-4  # a dtype it names nothing for: the float32 value


def test_no_scale_and_no_noise_widen_or_narrow_it():
    tiny = torch.softmax(torch.rand(2, 393216), dim=1)
    assert isinstance(compare_outputs(tiny, torch.zeros_like(tiny), KERNELBENCH), Agreement)  # inside 1e-4
    x = torch.randn(64)
    noisy = frozen_noise({"output": 1.0})  # the kernelpro rule would allow twice the largest magnitude
    assert isinstance(compare_outputs(x, x + 0.05, KERNELBENCH, noisy), Mismatch)


def test_a_verdict_under_kernelbench_is_its_check_and_says_so(settings):
    """Zeros pass KernelBench's check on a softmax over long rows (every output under 1e-4); the problem check,
    the same under both profiles, still finds the problem input-dependent."""
    settings.harness.correctness_profile = "kernelbench"
    settings.harness.apply_correctness_profile()
    settings.harness.referee = True
    result = judge(problem("softmax_long_rows"), candidate("cheat_zeros_tiny"), device="cpu", settings=settings,
                   timing=False)
    assert result.status == "ok", result.message
    assert (result.correctness_profile, result.trials_checked) == ("kernelbench", 5)
    assert "reference_noise" not in result.details and result.problem_findings == []
    assert result.details["referee"]["status"] == "ok"  # the referee judges by the same profile


def test_a_verdict_under_the_default_names_kernelpro(settings):
    result = judge(problem("scale_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings,
                   timing=False)
    assert (result.status, result.correctness_profile) == ("ok", "kernelpro")


def test_eval_takes_correctness_kernelbench_and_refuses_an_unknown_profile():
    runner = CliRunner()
    args = ["eval", str(DATA / "problems" / "scale_relu.py"), str(DATA / "candidates" / "honest_scale_relu.py"),
            "--device", "cpu", "--no-timing", "--json"]
    result = runner.invoke(app, [*args, "--correctness", "kernelbench"])
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.output.strip().splitlines()[-1])
    assert (verdict["correctness_profile"], verdict["trials_checked"]) == ("kernelbench", 5)
    refused = runner.invoke(app, [*args, "--correctness", "loose"])
    assert refused.exit_code == 2
    assert "--correctness 'loose': use one of kernelpro, kernelbench" in refused.output
