"""``harness.correctness_profile = "kernelbench"``: KernelBench's own check, torch.allclose at atol=rtol=1e-2 on
five fresh input sets and nothing more, chosen with ``--correctness kernelbench`` and named in the verdict."""

from __future__ import annotations

import json

import torch
from typer.testing import CliRunner

from kernelpro.cli import app
from kernelpro.config import HarnessSettings
from kernelpro.harness.compare import Agreement, Mismatch, compare_outputs
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
    """``allclose(output, ref)``: ``|ref - cand| <= 1e-2 + 1e-2 * |cand|``, for every dtype."""
    ref = torch.ones(4)
    above, below = torch.full((4,), 1.0201), torch.full((4,), 0.9801)
    for cand in (above, below):
        expected = torch.allclose(ref, cand, atol=1e-2, rtol=1e-2)
        assert isinstance(compare_outputs(ref, cand, KERNELBENCH), Agreement) is expected
    assert isinstance(compare_outputs(ref, above, KERNELBENCH), Agreement)  # its rtol term sees 1.0201
    assert isinstance(compare_outputs(ref, below, KERNELBENCH), Mismatch)
    assert isinstance(compare_outputs(ref.double(), above.double(), KERNELBENCH), Agreement)


def test_no_scale_and_no_noise_widen_or_narrow_it():
    tiny = torch.softmax(torch.rand(2, 393216), dim=1)
    assert isinstance(compare_outputs(tiny, torch.zeros_like(tiny), KERNELBENCH), Agreement)  # inside 1e-2
    x = torch.randn(64)
    noisy = frozen_noise({"output": 1.0})  # the kernelpro rule would allow twice the largest magnitude
    assert isinstance(compare_outputs(x, x + 0.05, KERNELBENCH, noisy), Mismatch)


def test_a_verdict_under_kernelbench_is_its_check_and_says_so(settings):
    """Zeros pass KernelBench's check on a softmax over long rows (every output under 1e-2); the problem check,
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
