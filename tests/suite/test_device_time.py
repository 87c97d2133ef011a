"""Where a suite's judging time went: each verdict once, by phase and by how jobs held the device, in the
suite's report."""

from __future__ import annotations

import json

from kernelpro.suite.device_time import device_time, judged_verdicts
from kernelpro.suite.report import write_suite_report
from tests.suite.helpers import ledger_with, run_summary


def verdict(elapsed: float, correctness: float, **turn: float) -> dict:
    return {"status": "ok", "elapsed_s": elapsed, "speedup": 1.0 + elapsed / 100,
            "details": {"phase_s": {"correctness": correctness, "timing": elapsed - correctness},
                        **({"device_turn": {**turn, "taken_back": 1}} if turn else {})}}


def test_a_suites_verdicts_are_counted_once_by_phase_and_by_how_the_device_was_held(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"level1/1_a": {"level": 1, "result": run_summary(True, 1.5)}})
    run = paths.runs / ledger.problem("level1/1_a").run_id
    (run / "candidates").mkdir(parents=True)
    baseline = verdict(40.0, 36.0, shared_s=2.0, released_s=34.0, alone_s=4.0, waited_alone_s=6.0)
    (run / "judged_before.jsonl").write_text(json.dumps(
        {"label": "the compile_default baseline", "source": "x = 1", "result": baseline}) + "\n")
    answered = {**baseline, "details": {**baseline["details"], "answered_by": "the compile_default baseline"}}
    (run / "candidates" / "a.json").write_text(json.dumps(answered))  # the recipe that is the baseline's code
    (run / "candidates" / "b.json").write_text(json.dumps(verdict(5.0, 1.0, shared_s=1.0, alone_s=4.0,
                                                                  waited_to_start_s=3.0)))
    final = verdict(9.0, 1.0, shared_s=1.0, alone_s=8.0)
    final["details"]["timing"] = {"gpu_peak_mb": 6 * 1024}  # the most a timed job held, of those that say
    (run / "candidates" / "b.final.json").write_text(json.dumps(final))
    (run / "candidates" / "c.json").write_text("{")  # a run writing it just now
    spent = device_time(judged_verdicts(paths.root, [("level1/1_a", run.name)]))
    assert (spent["verdicts"], spent["elapsed_s"]) == (3, 54.0)
    assert spent["phase_s"] == {"correctness": 38.0, "timing": 16.0}
    assert spent["device_turn_s"] == {"shared_s": 4.0, "released_s": 34.0, "alone_s": 16.0, "waited_alone_s": 6.0,
                                      "waited_to_start_s": 3.0}

    md = write_suite_report(paths, ledger)[1].read_text()
    section = md.split("## Device time", 1)[1].split("## Problems", 1)[0]
    assert "| verdicts | 3, 54 s in the judge's workers |" in section
    assert "| phase: correctness | 38 s |" in section
    assert "| device let go while compiling | 34 s |" in section
    assert "| device waited to hold it alone | 6 s |" in section
    assert spent["timing_gpu_peak_mb"] == 6 * 1024
    assert "| most GPU memory one job held while timed | 6.0 GiB |" in section


def test_a_suite_with_nothing_judged_yet_has_no_device_time_section(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"level1/1_a": {"level": 1, "state": "pending"}})
    assert "## Device time" not in write_suite_report(paths, ledger)[1].read_text()
