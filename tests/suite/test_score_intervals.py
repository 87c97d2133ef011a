"""The suite's scores with what the judge's noise allows: the geomean's 95% interval and each fast_p's range,
from the problems' own intervals."""

from __future__ import annotations

import math

import pytest

from kernelpro.harness.timing.stats import Measured
from kernelpro.suite.score_intervals import fast_p_range, geomean_interval
from kernelpro.suite.scores import suite_scores
from tests.suite.helpers import ledger_with, run_summary

COMPILED = {"compile_default": {"status": "ok", "correct": True, "speedup": 1.25, "speedup_ci95": [1.2, 1.3]}}


def test_a_measured_speedup_keeps_its_interval_and_a_ratio_adds_both_errors():
    best = Measured.of(2.0, [1.9, 2.1])
    assert (best.low, best.high) == (1.9, 2.1)
    assert Measured.of(1.0, None).log_se == 0.0  # a kept reference is exactly 1
    assert Measured.of(1.5, [1.52, 1.6]).low == 1.5  # an interval beside its (rounded) figure reaches it
    ratio = best.over(Measured.of(1.25, [1.2, 1.3]))
    assert ratio.value == pytest.approx(1.6)
    assert ratio.log_se == pytest.approx(math.hypot(best.log_se, Measured.of(1.25, [1.2, 1.3]).log_se), rel=1e-3)
    assert best.over(Measured.of(1.0, None)).log_se == pytest.approx(best.log_se, rel=1e-3)


def test_the_geomeans_interval_narrows_as_independent_problems_average_and_is_a_point_when_all_are_exact():
    one = Measured.of(2.0, [1.8, 2.2])
    low, high = geomean_interval([one])
    assert low == pytest.approx(one.low, rel=0.01) and high == pytest.approx(one.high, rel=0.01)
    four = geomean_interval([one] * 4)
    assert four[0] > low and four[1] < high and four[0] < 2.0 < four[1]
    assert geomean_interval([Measured.of(1.0, None), Measured.of(1.0, None)]) == [1.0, 1.0]
    assert geomean_interval([]) is None


def test_fast_p_ranges_from_the_problems_surely_above_to_those_possibly_above():
    values = [Measured.of(2.0, [1.9, 2.1]), Measured.of(1.0, None), None]
    ranges = fast_p_range(values, 3, (0.5, 1.0, 2.0))
    assert ranges[0.5] == [2 / 3, 2 / 3]  # the kept reference is surely above half; the failed one never
    assert ranges[1.0] == [1 / 3, 1 / 3]
    assert ranges[2.0] == [0.0, 1 / 3]  # 2.0x [1.9-2.1]: possibly above 2, not surely
    assert fast_p_range([], 0, (1.0,)) == {1.0: [0.0, 0.0]}


def test_suite_scores_and_their_report_carry_the_intervals(tmp_path):
    from kernelpro.suite.report_content import problem_rows, score_rows

    _, ledger = ledger_with(tmp_path, {
        "level1/1_A": {"level": 1, "result": run_summary(True, 2.0), "baselines": COMPILED},  # 2.0x [1.9-2.1]
        "level1/2_B": {"level": 1, "result": run_summary(False, 0.9), "baselines": COMPILED},  # kept: 1x
        "level1/3_C": {"level": 1, "state": "failed", "failure": "boom", "failure_kind": "crash"},
    })
    scores, problems = suite_scores(ledger.problems())
    low, high = scores.geomean_speedup_ci95
    assert scores.geomean_speedup == pytest.approx(2.0 ** 0.5) and low < scores.geomean_speedup < high
    assert scores.fast_p_range["2.0"] == pytest.approx([0.0, 1 / 3]) and scores.fast_p["2.0"] == 0.0
    assert scores.fast_p_range["1.0"] == pytest.approx([1 / 3, 1 / 3])
    by_key = {p.key: p for p in problems}
    kept = by_key["level1/2_B"].vs_compile_ci95  # the reference kept, against a compile baseline's interval
    assert kept[0] == pytest.approx(1 / 1.3, rel=0.02) and kept[1] == pytest.approx(1 / 1.2, rel=0.02)
    assert scores.to_dict()["per_level"]["1"]["geomean_speedup_ci95"] == scores.geomean_speedup_ci95
    rows = {row[0]: row for row in score_rows(scores)}
    assert rows["fast_2.0"][1] == "0.000 (0.000-0.333)" and rows["fast_1.0"][1] == "0.333"
    assert rows["geomean speedup (correct problems)"][1] == f"1.41x [{low:.2f}-{high:.2f}]"
    table = {row[0]: row for row in problem_rows(ledger.problems(), problems)}
    assert table["level1/1_A"][4].startswith("1.60x [")
    assert "compile default 1.25x [1.20-1.30]" in table["level1/1_A"][5]  # each baseline with its interval
