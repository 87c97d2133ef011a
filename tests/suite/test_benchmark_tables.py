"""The figures the suite benchmarks report: the judge's seconds over a suite's verdicts, each counted once, and
two suites compared on the problems both finished."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.suite.helpers import ledger_with, run_summary

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from compare_suites import compare, read_suite  # noqa: E402
from suite_kernelbench import baseline_table, where_gpu_time_went  # noqa: E402


def verdict(elapsed: float, correctness: float, speedup: float, **details) -> dict:
    return {"status": "ok", "elapsed_s": elapsed, "speedup": speedup,
            "details": {"phase_s": {"correctness": correctness, "timing": elapsed - correctness}, **details}}


def test_an_older_suites_baselines_and_a_candidate_answered_by_one_are_counted_once(tmp_path):
    paths, _ = ledger_with(tmp_path / "suite", {"level2/1_a": {"level": 2}})
    baseline = verdict(39.0, 37.5, 2.14)
    (paths.logs).mkdir(parents=True, exist_ok=True)  # a suite from before runs judged their baselines
    (paths.logs / "level2_1.baseline-verdicts.jsonl").write_text(
        json.dumps({"label": "the suite's compile_max_autotune_no_cudagraphs baseline", "result": baseline}) + "\n")
    candidates = paths.runs / "p020" / "candidates"
    candidates.mkdir(parents=True)
    (candidates / "a.json").write_text(json.dumps(baseline))  # an older run's copy, unmarked
    (candidates / "b.json").write_text(json.dumps(verdict(41.0, 36.6, 2.17)))
    (candidates / "c.json").write_text(json.dumps(verdict(41.0, 36.6, 2.17, answered_by="b")))  # b's twin
    (candidates / "b.final.json").write_text(json.dumps(verdict(46.8, 34.1, 2.25)))
    phases = where_gpu_time_went(tmp_path / "suite")
    assert (phases["verdicts"], phases["elapsed_s"]) == (3, 126.8)
    assert phases["phase_s"]["correctness"] == 108.2


def test_baselines_a_run_judged_itself_are_read_from_its_directory_and_counted_once(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"level2/1_conv": {"level": 2}})
    ledger.update("level2/1_conv", run_id="r-1")
    baseline = verdict(39.0, 37.5, 2.14)
    run = paths.runs / "r-1"
    (run / "candidates").mkdir(parents=True)
    (run / "judged_before.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in (
        {"label": "the compile_default baseline", "source": "x = 1", "result": baseline},
        {"label": "an earlier judgment", "source": "x = 2", "result": verdict(5.0, 4.0, 1.0)})))
    (run / "candidates" / "a.json").write_text(json.dumps({**baseline, "details": {
        **baseline["details"], "answered_by": "the compile_default baseline"}}))
    (run / "candidates" / "b.json").write_text(json.dumps(verdict(3.0, 1.0, 1.01)))
    phases = where_gpu_time_went(tmp_path)
    assert (phases["verdicts"], phases["elapsed_s"]) == (2, 42.0)  # the baseline once, not the other verdict
    table = baseline_table(tmp_path)
    assert [row["problem"] for row in table["rows"]] == ["level2_1_conv"]
    assert table["rows"][0]["compile_default"]["speedup"] == 2.14
    assert table["totals"]["compile_default"]["verdicts"] == 1


def test_two_suites_are_compared_on_the_problems_both_finished(tmp_path):
    def baselines(speedup: float) -> dict:
        return {"compile_default": {"status": "ok", "speedup": speedup, "speedup_ci95": [speedup - 0.01,
                                                                                          speedup + 0.01]}}
    _, before = ledger_with(tmp_path / "a", {
        "level1/1_a": {"level": 1, "result": run_summary(True, 2.0), "baselines": baselines(1.50)},
        "level1/2_b": {"level": 1, "result": run_summary(True, 1.2), "baselines": baselines(0.90)}})
    _, after = ledger_with(tmp_path / "b", {
        "level1/1_a": {"level": 1, "result": run_summary(True, 2.02), "baselines": baselines(1.80)},
        "level1/2_b": {"level": 1, "state": "failed", "failure_kind": "gpu_memory", "failure": "CUDA out of memory"}})
    report = compare(read_suite(before.path), read_suite(after.path))
    assert report["done_in_both"] == 1 and report["after"]["states"] == {"done": 1, "failed": 1}
    [row] = [r for r in report["problems"] if "agree" in r]
    assert row["agree"] == {"best": True, "compile_default": False}  # 2.0 [1.9-2.1] and 2.02; 1.50 and 1.80
    assert row["after_over_before"] == {"best": 1.01, "compile_default": 1.2}
    assert report["after_over_before"]["within_5pct"] == 1 and report["intervals_overlap"] == "1/2"
