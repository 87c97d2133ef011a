"""The referee on a real GPU: each model in a CUDA process of its own, the candidate's outputs and claimed
times checked from the trusted side."""

from __future__ import annotations

import pytest
import torch

from kernelpro.harness.jobs import make_job
from kernelpro.harness.judge import judge
from kernelpro.harness.referee.run import run_referee
from tests.conftest import candidate, problem
from tests.harness.test_referee import referee_candidate

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]


def report(source: str, settings, problem_name: str):
    return run_referee(make_job(problem(problem_name), source, "cuda", settings), settings.harness).report


@pytest.mark.parametrize(("name", "problem_name"), [("honest_matmul_relu", "matmul_relu"),
                                                     ("honest_triton_scale_relu", "scale_relu")])
def test_an_honest_cuda_candidate_is_confirmed_with_the_referees_speed(name, problem_name, settings):
    settings.harness.referee = True  # the tests' own default is off (conftest), the user's is on
    result = judge(problem(problem_name), candidate(name), device="cuda", settings=settings)
    assert result.status == "ok", result.message
    assert result.speedup == result.details["referee"]["speedup"]
    assert result.candidate.method.startswith("cuda events")
    assert result.candidate.gpu_median_ms > 0 and result.reference.gpu_median_ms > 0


def test_a_cuda_clock_that_under_reports_is_a_timer_mismatch(settings):
    found = report(referee_candidate("cuda_clock_liar"), settings, "matmul_relu")
    assert (found["status"], found["reason"]) == ("rejected", "timer_mismatch"), found


def test_zeros_from_a_cuda_candidate_are_incorrect_under_the_referee(settings):
    assert report(referee_candidate("zeros"), settings, "scale_relu")["status"] == "incorrect"
