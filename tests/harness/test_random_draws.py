"""A reference that draws random numbers (dropout in training mode): both models are seeded alike before every
call, correctness trials and timed calls alike, so code that draws as the reference does is correct, and a
candidate that draws its own numbers is told why it differs."""

from __future__ import annotations

from kernelpro.harness.judge import judge
from tests.conftest import candidate, problem


def test_a_reference_that_draws_random_numbers_matches_itself_in_every_checked_and_timed_call(settings):
    source = problem("dropout_softmax").source.replace("class Model(", "class ModelNew(")
    result = judge(problem("dropout_softmax"), source, device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert result.max_abs_error == 0.0
    assert result.details["timing"]["outputs_checked"] >= settings.harness.min_timing_trials


def test_a_candidate_drawing_its_own_random_numbers_is_incorrect_and_told_why(settings):
    result = judge(problem("dropout_softmax"), candidate("fault_dropout_own_draws"), device="cpu",
                   settings=settings)
    assert (result.status, result.reason) == ("incorrect", "value_mismatch")
    assert "the reference draws random numbers" in result.message
    assert "seeded alike before every call" in result.message


def test_a_mismatch_on_a_reference_without_random_draws_says_nothing_of_them(settings):
    wrong = candidate("honest_scale_relu").replace("mul_(self.scale)", "mul_(self.scale + 1.0)")
    result = judge(problem("scale_relu"), wrong, device="cpu", settings=settings)
    assert (result.status, result.reason) == ("incorrect", "value_mismatch")
    assert "random" not in result.message
