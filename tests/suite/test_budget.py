"""A suite's budgets split among its problems."""

from __future__ import annotations

import pytest

from kernelpro.suite.budget import BudgetError, Limits, parse_per_problem, seconds, share, spent_reason


def test_what_is_left_is_shared_among_the_problems_left():
    totals = Limits(time_s=3600, gpu_s=600, usd=10.0)
    first = share(totals, Limits(), Limits(time_s=0, gpu_s=0, usd=0), problems_left=4, lanes=2)
    assert (first.time_s, first.gpu_s, first.usd) == (1800, 150, 2.5)  # two problems per lane
    later = share(totals, Limits(usd=1.0), Limits(time_s=1800, gpu_s=100, usd=2.0), problems_left=2, lanes=2)
    assert (later.time_s, later.gpu_s, later.usd) == (1800, 250, 1.0)  # the per-problem cap holds
    assert share(Limits(), Limits(), Limits(), 3, 1) == Limits()
    assert spent_reason(totals, Limits(time_s=10, gpu_s=600, usd=0)) == "suite GPU budget spent (600 s of 600 s)"
    assert spent_reason(totals, Limits(time_s=10, gpu_s=10, usd=1)) is None


def test_per_problem_budgets_are_read_or_refused():
    assert parse_per_problem("time=10m,gpu=90s,usd=0.5") == Limits(time_s=600, gpu_s=90, usd=0.5)
    assert parse_per_problem("1h30m") == Limits(time_s=5400)
    assert seconds("2h") == 7200
    for bad in ("watts=3", "time=soon", "time="):
        with pytest.raises(BudgetError):
            parse_per_problem(bad)
