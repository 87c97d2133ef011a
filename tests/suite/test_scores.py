"""The field's scores over a suite, from its ledger: fast_p as KernelBench defines it, geomean, per level."""

from __future__ import annotations

import pytest

from kernelpro.suite.scores import suite_scores
from tests.suite.helpers import ledger_with, run_summary

COMPILED = {"compile_default": {"status": "ok", "correct": True, "speedup": 1.25, "speedup_ci95": [1.2, 1.3]}}


def test_fast_p_counts_all_problems_and_only_re_judged_bests_above_one(tmp_path):
    _, ledger = ledger_with(tmp_path, {
        "level1/1_A": {"level": 1, "result": run_summary(True, 2.5), "baselines": COMPILED},
        "level1/2_B": {"level": 1, "result": run_summary(True, 1.1), "baselines": COMPILED},
        # correct candidates measured at 1.08x but not faster beyond the interval: the reference is kept
        "level1/3_C": {"level": 1, "result": run_summary(False, 1.08), "baselines": {}},
        "level2/1_D": {"level": 2, "result": run_summary(False, 0.6)},
        "level2/2_E": {"level": 2, "result": run_summary(False, None, correct=0)},
        "level2/3_F": {"level": 2, "state": "failed", "failure": "the optimisation ran past its limit",
                       "failure_kind": "hang"},
        "level2/4_G": {"level": 2, "result": run_summary(False, None, correct=0, degenerate="constant_output: x")},
        "level2/5_H": {"level": 2, "state": "running"},
    })
    scores, problems = suite_scores(ledger.problems())
    assert scores.problems == 6  # degenerate and unfinished problems are not scored
    assert scores.correct == 4 and scores.improved == 2 and scores.correct_rate == pytest.approx(4 / 6)
    # a kept reference scores 1x, what the run hands over, however slow its candidates were
    assert scores.fast_p == pytest.approx({"0": 4 / 6, "0.5": 4 / 6, "0.8": 4 / 6, "1.0": 2 / 6, "1.2": 1 / 6,
                                           "1.5": 1 / 6, "2.0": 1 / 6})
    assert scores.geomean_speedup == pytest.approx((2.5 * 1.1 * 1.0 * 1.0) ** 0.25)
    # against the fastest compile baseline (1.25x over eager) where one ran correctly, eager elsewhere
    by_key = {p.key: p for p in problems}
    assert by_key["level1/1_A"].vs_compile == pytest.approx(2.0) and by_key["level1/1_A"].compile_baseline
    assert by_key["level1/2_B"].vs_compile == pytest.approx(0.88)
    assert by_key["level1/3_C"].vs_compile == pytest.approx(1.0) and by_key["level1/3_C"].compile_baseline is None
    assert (by_key["level2/1_D"].speedup, by_key["level2/1_D"].fastest_candidate) == (1.0, 0.6)
    assert scores.fast_p_vs_compile["1.0"] == pytest.approx(1 / 6)
    assert scores.per_level["1"]["fast_p"]["1.0"] == pytest.approx(2 / 3)
    assert scores.per_level["2"]["problems_scored"] == 3 and scores.per_level["2"]["correct"] == 1
    assert scores.gpu_seconds == pytest.approx(6 * 60.0) and scores.llm_cost_usd == pytest.approx(3.0)
    spend = scores.spend()
    assert spend["gpu_minutes_per_problem"] == pytest.approx(1.0) and spend["usd_per_improved"] == pytest.approx(1.5)


def test_an_empty_suite_scores_nothing(tmp_path):
    _, ledger = ledger_with(tmp_path, {"a": {"state": "pending"}})
    scores, _ = suite_scores(ledger.problems())
    assert scores.problems == 0 and scores.geomean_speedup is None and scores.fast_p["1.0"] == 0.0
    assert scores.spend()["usd_per_improved"] is None


def test_the_table_shows_a_kept_reference_at_1x_with_its_fastest_candidate_beside(tmp_path):
    from kernelpro.suite.report_content import problem_rows

    _, ledger = ledger_with(tmp_path, {"level2/1_D": {"level": 2, "result": run_summary(False, 0.48)},
                                       "level1/1_A": {"level": 1, "result": run_summary(True, 2.5)}})
    rows = ledger.problems()
    table = {row[0]: row for row in problem_rows(rows, suite_scores(rows)[1])}
    assert table["level2/1_D"][1:3] == ("kept the reference", "1.00x (the reference; fastest candidate 0.48x)")
    assert table["level1/1_A"][1:3] == ("improved", "2.50x")


def test_problems_whose_eager_time_is_host_bound_are_counted_apart(tmp_path):
    from kernelpro.suite.report_content import score_rows

    def baselines(*host_bound):
        return {f"b{i}": {**COMPILED["compile_default"], "host_bound": h} for i, h in enumerate(host_bound)}

    _, ledger = ledger_with(tmp_path, {
        "level2/1_A": {"level": 2, "result": run_summary(True, 3.0), "baselines": baselines(True, True)},
        "level2/2_B": {"level": 2, "result": run_summary(False, 1.01), "baselines": baselines(True, None)},
        "level1/1_C": {"level": 1, "result": run_summary(True, 1.2), "baselines": baselines(False, True)},
        "level1/2_D": {"level": 1, "result": run_summary(True, 1.3), "baselines": {}},
        # every compile baseline incorrect (no timing): the run's own verdicts timed eager beside its candidates
        "level2/3_E": {"level": 2, "result": {**run_summary(True, 2.9), "reference_host_bound": True},
                       "baselines": {"compile_default": {**COMPILED["compile_default"], "status": "incorrect",
                                                         "correct": False, "speedup": None, "host_bound": None}}},
        "level2/4_F": {"level": 2, "result": {**run_summary(True, 1.1), "reference_host_bound": True},
                       "baselines": baselines(False)},  # the baselines' word comes first
    })
    scores, problems = suite_scores(ledger.problems())
    # most verdicts that say; a tie is not
    assert [p.host_bound for p in problems] == [True, True, False, None, True, False]
    assert (scores.host_bound, scores.host_bound_improved) == (3, 2)
    assert scores.to_dict()["host_bound_improved"] == 2 and scores.per_level["2"]["host_bound"] == 3
    assert ("improved where eager is host-bound", "2/3", "") in score_rows(scores)


def test_the_table_shows_each_best_s_second_opinion_beside_the_judge_s_figure(tmp_path):
    from kernelpro.suite.report_content import PROBLEM_HEADER, problem_rows

    disputed = {**run_summary(False, 3.92), "second_opinion": {
        "variant": "ab12", "status": "disagree", "speedup": 0.97, "speedup_ci95": [0.95, 0.99],
        "judged_speedup": 3.92, "judged_ci95": [3.85, 4.0], "rounds": 200}}
    _, ledger = ledger_with(tmp_path, {"level1/1_A": {"level": 1, "result": disputed},
                                       "level1/2_B": {"level": 1, "result": run_summary(True, 2.5)}})
    rows = ledger.problems()
    table = {row[0]: row for row in problem_rows(rows, suite_scores(rows)[1])}
    column = PROBLEM_HEADER.index("second opinion")
    assert table["level1/1_A"][column] == ("0.97x [0.95-0.99] disagrees with the judge's 3.92x [3.85-4.00] "
                                           "(ab12, 200 rounds)")
    assert table["level1/2_B"][column] == "-"  # none asked for
