"""A suite's scores under both scorecards, from a real ledger: kernelpro's and KernelBench's convention, each
read from the problem's stored best (``best_kernelbench`` of its run's summary)."""

from __future__ import annotations

import pytest

from kernelpro.suite.report import write_suite_report
from kernelpro.suite.scores import suite_scores
from tests.suite.helpers import ledger_with, run_summary


def with_kernelbench(summary: dict, speedup: float | None) -> dict:
    figure = None if speedup is None else {"speedup": speedup, "speedup_ci95": [speedup * 0.98, speedup * 1.02],
                                           "reference_ms": 1.0, "candidate_ms": 1.0 / speedup, "rounds": 30,
                                           "method": "CUDA events behind an L2 flush, mean of calls, no host floor"}
    return {**summary, "best_kernelbench": figure}


def ledger(tmp_path):
    return ledger_with(tmp_path, {
        "level1/1_a": {"level": 1, "result": with_kernelbench(run_summary(True, 2.0), 3.0)},  # host floor hides events
        "level1/2_b": {"level": 1, "result": with_kernelbench(run_summary(True, 1.3), 0.9)},  # host issue time saved
        "level1/3_c": {"level": 1, "result": run_summary(False, 0.8)},  # the reference kept: 1x in both
        "level1/4_d": {"level": 1, "result": with_kernelbench(run_summary(True, 1.5), None)},  # judged with no referee
        "level1/5_e": {"level": 1, "state": "failed", "failure": "crashed", "failure_kind": "crash"},
    })


def test_fast_p_and_geomean_under_both_scorecards(tmp_path):
    _, book = ledger(tmp_path)
    scores, _ = suite_scores(book.problems())
    assert scores.problems == 5 and scores.fast_p["1.0"] == pytest.approx(3 / 5)
    assert scores.geomean_speedup == pytest.approx((2.0 * 1.3 * 1.0 * 1.5) ** 0.25)
    kb = scores.kernelbench
    assert kb["problems_scored"] == 4 and kb["unmeasured"] == 1  # d has no figure in KernelBench's convention
    assert kb["fast_p"]["1.0"] == pytest.approx(1 / 4) and kb["fast_p"]["0.8"] == pytest.approx(3 / 4)
    assert kb["fast_p"]["2.0"] == pytest.approx(1 / 4)
    assert kb["geomean_speedup"] == pytest.approx((3.0 * 0.9 * 1.0) ** (1 / 3))
    low, high = kb["geomean_speedup_ci95"]
    assert low < kb["geomean_speedup"] < high
    assert scores.to_dict()["kernelbench"] == kb and scores.per_level["1"]["kernelbench"]["unmeasured"] == 1


def test_the_report_shows_both_scorecards(tmp_path):
    paths, book = ledger(tmp_path)
    html, markdown = write_suite_report(paths, book)
    text = markdown.read_text()
    assert "### In KernelBench's convention" in text
    assert "| geomean speedup (correct problems) | 1.39x" in text
    assert "| improved without a KernelBench figure (left out) | 1 |" in text
    assert "<h3>In KernelBench's convention</h3>" in html.read_text()
