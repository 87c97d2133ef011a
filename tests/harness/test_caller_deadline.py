"""A caller's deadline (a run's time budget): the job in flight stops there, and no job starts after it; neither
is a verdict on the candidate (``CUT_AT_DEADLINE``, not ``wall_time``)."""

from __future__ import annotations

import time

import pytest

from kernelpro.config import HarnessSettings
from kernelpro.harness.deadline import Deadline
from kernelpro.harness.judge import PipelineEvaluator
from kernelpro.harness.result import CUT_AT_DEADLINE
from tests.conftest import candidate, problem


def test_the_callers_end_comes_first_only_when_it_is_earlier():
    settings = HarnessSettings(timeout_s=300.0)
    deadline = Deadline(settings, started=0.0, until=10.0)
    assert deadline.at(now=1.0) == 10.0 and deadline.by_caller(now=1.0)
    assert deadline.expired(now=10.5) and "the run's time budget" in deadline.describe(now=10.5)
    late = Deadline(settings, started=0.0, until=900.0)
    assert late.at(now=1.0) == 300.0 and not late.by_caller(now=1.0) and "harness.timeout_s" in late.describe(1.0)


@pytest.mark.parametrize("mode", ["fresh", "persistent"])
def test_a_hang_stops_at_the_callers_deadline_and_the_next_candidate_never_starts(settings, mode):
    settings.harness.worker_mode = mode
    settings.harness.timeout_s = settings.harness.timeout_floor_s = 120  # its own limits stay far off
    evaluator = PipelineEvaluator(settings, "cpu")
    try:
        hang, honest = candidate("fault_infinite_loop"), candidate("honest_scale_relu")
        stopped, never = evaluator.judge_many(problem("scale_relu"), [hang, honest], until=time.monotonic() + 8)
    finally:
        evaluator.close()
    assert (stopped.status, stopped.reason) == ("timeout", CUT_AT_DEADLINE), stopped.message
    assert "the run's time budget" in stopped.message
    assert (never.reason, never.message) == (CUT_AT_DEADLINE, "not judged: the caller's deadline came before its turn")
