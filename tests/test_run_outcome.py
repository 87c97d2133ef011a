"""RunOutcome reads the summary.json run directories hold (this version's, an older one with fewer keys, the part a
suite's ledger keeps) and writes the same keys back; the suite reads its child's last line through it."""

from __future__ import annotations

import json

from kernelpro.runs.outcome import RunOutcome
from kernelpro.suite.job import _summary
from kernelpro.suite.ledger import ProblemRow

RUN = "/runs/20261207-222934-scale_relu-b608"
# summary.json as `kernelpro optimize` wrote it before RunOutcome (an improved CPU run with baselines)
WRITTEN = f"""{{
 "run_id": "20261207-222934-scale_relu-b608",
 "status": "completed",
 "improved": true,
 "best_speedup": 1.4213,
 "best_speedup_ci95": [
  1.31,
  1.52
 ],
 "best_variant": "v3",
 "best_candidate": "{RUN}/best_candidate.py",
 "no_improvement_reason": "",
 "report": "{RUN}/report.html",
 "report_md": "{RUN}/report.md",
 "candidates_judged": 4,
 "llm_cost_usd": 0.012345,
 "results": "{RUN}/results.jsonl",
 "run_dir": "{RUN}",
 "stop_reason": "iteration budget reached (4 candidates judged)",
 "idea_source": "recipes",
 "search_policy": "recipes",
 "gpu_seconds": 0.0,
 "wall_seconds": 3.020786,
 "gate": "measure_all",
 "gate_ranking": "",
 "gate_skipped": 0,
 "gate_saved_s": 0.0,
 "objective": "time",
 "best_energy_ratio": null,
 "best_energy_ci95": null,
 "best_edp_ratio": null,
 "best_edp_ci95": null,
 "best_energy_j": null,
 "reference_energy_j": null,
 "best_power_w": null,
 "reference_power_w": null,
 "correct_candidates": 3,
 "reference_host_bound": false,
 "fastest_correct_speedup": 1.4213,
 "fastest_correct_ci95": [
  1.31,
  1.52
 ],
 "reference_ms": 0.050205,
 "best_ms": 0.035323,
 "degenerate": null,
 "scorecard": "kernelpro",
 "best_kernelbench": {{
  "speedup": 1.38,
  "speedup_ci95": [
   1.2,
   1.5
  ]
 }},
 "baselines": {{
  "compile_default": {{
   "status": "ok",
   "correct": true,
   "speedup": 1.1,
   "speedup_ci95": [
    1.0,
    1.2
   ]
  }}
 }},
 "second_opinion": null,
 "summary": "{RUN}/summary.json"
}}"""
# and as a version before objectives, energy, scorecards and second opinions wrote it
OLDER = {"run_id": "r-old", "status": "stopped", "improved": False, "best_speedup": 1.0, "best_speedup_ci95": None,
         "best_variant": "reference", "best_candidate": "/p/x.py", "no_improvement_reason": "no candidate was judged",
         "report": "/runs/r-old/report.html", "candidates_judged": 0, "llm_cost_usd": 0.0, "stop_reason": "stopped",
         "gpu_seconds": 0.0}


def test_an_existing_summary_reads_typed_and_writes_back_the_same_file(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "summary.json").write_text(WRITTEN)
    outcome = RunOutcome.read(run_dir)
    assert outcome is not None and outcome.improved and outcome.best_speedup == 1.4213
    assert outcome.best_speedup_ci95 == [1.31, 1.52] and outcome.candidates_judged == 4
    assert outcome.best_kernelbench == {"speedup": 1.38, "speedup_ci95": [1.2, 1.5]}
    assert outcome.baselines["compile_default"]["speedup"] == 1.1 and outcome.reference_host_bound is False
    assert outcome.to_json() == json.loads(WRITTEN)
    written = outcome.write(tmp_path)
    assert written.read_text() == WRITTEN  # the same keys, in the same order, the same layout


def test_an_older_summary_reads_with_defaults_for_what_it_lacks():
    outcome = RunOutcome.of(OLDER)
    assert (outcome.status, outcome.improved, outcome.candidates_judged) == ("stopped", False, 0)
    assert outcome.objective is None and outcome.correct_candidates == 0 and outcome.best_kernelbench is None
    assert outcome.to_json() == OLDER  # nothing added to what it holds


def test_unknown_keys_are_kept_and_an_unreadable_value_is_left_at_its_default():
    outcome = RunOutcome.of({"status": "completed", "a_later_key": [1, 2], "candidates_judged": "many"})
    assert outcome.candidates_judged == 0 and outcome.status == "completed"
    assert outcome.to_json() == {"status": "completed", "a_later_key": [1, 2]}


def test_the_suite_reads_the_childs_last_line_and_its_ledger_rows_typed():
    assert _summary(json.dumps(OLDER)) == OLDER
    assert _summary("Traceback (most recent call last):") is None and _summary("[1, 2]") is None
    assert RunOutcome.from_line(WRITTEN.replace("\n", "")).best_variant == "v3"
    row = ProblemRow(idx=0, key="a", path="/p/a.py", level=None, task=None, state="budget",
                     result={"stop_reason": "stopped at its deadline"})
    assert row.run_outcome.stop_reason == "stopped at its deadline" and not row.run_outcome.improved
    empty = ProblemRow(idx=1, key="b", path="/p/b.py", level=None, task=None, state="pending")
    assert empty.run_outcome == RunOutcome()
