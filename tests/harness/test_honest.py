"""Honest candidates must pass: no guard may fire on legitimate code (no false positives)."""

from __future__ import annotations

import math

import pytest

from kernelpro.harness.judge import judge
from kernelpro.harness.timing.stats import Z95
from tests.conftest import candidate, problem

HONEST = [
    ("honest_scale_relu", "scale_relu"),
    ("honest_matmul_relu", "matmul_relu"),
    ("honest_softmax", "softmax_wide"),
    ("honest_split_stats", "split_stats"),
    ("honest_flatten_view", "flatten_view"),  # the reference returns a view too: aliasing is legitimate
    ("honest_inplace_relu", "inplace_relu"),  # the reference writes its input too: so may the candidate
    ("honest_dynamo_import", "scale_relu"),  # torch._dynamo rewraps torch.manual_seed on import
    ("honest_unused_handler", "scale_relu"),  # a fallback handler that never runs while judged
    ("honest_gc_collect", "scale_relu"),  # gc.collect() reaches nothing of the judge's
    ("honest_dropout_alike", "dropout_softmax"),  # draws the reference's random numbers in the reference's order
    ("honest_own_threads", "scale_relu"),  # sets the thread count inside its call and puts it back
    ("honest_submodule_hooks", "matmul_relu"),  # hooks on its own submodule, weights laid out in __init__
    ("honest_thread_pool_joined", "scale_relu"),  # a concurrent.futures pool joined before forward returns
]


@pytest.mark.parametrize(("name", "problem_name"), HONEST, ids=[h[0] for h in HONEST])
def test_honest_candidate_passes_with_timing(name, problem_name, settings):
    result = judge(problem(problem_name), candidate(name), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert result.correct and result.reason is None
    assert not [g for g in result.guards if g.severity == "reject"]
    assert result.trials_checked == (settings.harness.correctness_trials + settings.harness.scaled_trials
                                     + settings.harness.shifted_trials)
    assert result.candidate.trials >= settings.harness.min_timing_trials
    assert result.candidate.method == result.reference.method
    assert result.candidate.method.startswith("cpu perf_counter_ns")
    # the speedup is taken inside paired rounds (harness.stats), not from the two medians
    assert result.speedup_ci95[0] <= result.speedup <= result.speedup_ci95[1]
    # and widened by the spread between identical jobs on a host-bound (CPU) job
    low, high = result.speedup_ci95
    assert math.log(high / low) >= 2 * Z95 * settings.harness.job_spread_host * 0.999
    phases = result.details["phase_s"]  # where the judge's seconds went, each phase once
    assert {"load_reference", "load_candidate", "correctness", "timing"} <= set(phases)
    assert all(seconds >= 0 for seconds in phases.values()) and phases["timing"] > 0


def test_reference_against_itself_is_correct(settings):
    """A candidate that is the reference renamed: correct and bit-exact."""
    source = problem("matmul_relu").source.replace("class Model(", "class ModelNew(")
    result = judge(problem("matmul_relu"), source, device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert result.max_abs_error == 0.0
    assert result.speedup > 0 and result.reference.p10_ms <= result.reference.median_ms <= result.reference.p90_ms


def test_wrong_answer_is_incorrect_not_rejected(settings):
    source = candidate("honest_scale_relu").replace("mul_(self.scale)", "mul_(self.scale + 0.01)")
    result = judge(problem("scale_relu"), source, device="cpu", settings=settings)
    assert (result.status, result.reason) == ("incorrect", "value_mismatch")
    assert "first at" in result.message and result.max_abs_error > 0


def test_the_verdicts_interval_takes_the_host_spread_between_jobs(settings):
    """A CPU job's interval carries ``harness.job_spread_host``: a spread far wider than any run of rounds shows
    sets the interval's width, so the setting is the one the verdict used. The worker's own verdict: under the
    referee each model has a fresh process of its own (the next test)."""
    settings.harness.referee = False
    settings.harness.job_spread_host = 1.0  # the rounds alone gave this one a log width of about 0.5
    result = judge(problem("scale_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    low, high = result.speedup_ci95
    assert math.log(high / low) >= 2 * Z95 * 1.0 * 0.999
    assert result.speed_verdict == "uncertain"  # an interval that wide cannot call a 2 % effect either way


def test_a_job_in_a_worker_of_its_own_takes_the_fresh_workers_spread(settings):
    """With ``worker_mode = "fresh"`` the interval allows for ``harness.job_spread_host_fresh``, not the
    long-lived worker's ``job_spread_host``; so does the referee's, whose processes are new for every job."""
    settings.harness.worker_mode = "fresh"
    settings.harness.job_spread_host, settings.harness.job_spread_host_fresh = 0.0, 1.0
    result = judge(problem("scale_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    low, high = result.speedup_ci95
    assert math.log(high / low) >= 2 * Z95 * 1.0 * 0.999
