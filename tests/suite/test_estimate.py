"""The suite's time budget as a promise, without a child process: what a problem costs before it starts, the
deadline of a job in flight, the ETA, and a problem a budget cut counted as the reference kept."""

from __future__ import annotations

import json

import pytest

from kernelpro.config import Settings
from kernelpro.runs.overrun import overrun_allowed_s
from kernelpro.suite.budget import Limits
from kernelpro.suite.driver import Driver, Progress, summary
from kernelpro.suite.estimate import Deadline, eta_s, job_deadline, problem_cost
from kernelpro.suite.job import JobOutcome, optimize_command
from kernelpro.suite.lanes import Lane
from kernelpro.suite.layout import SuiteConfig, create_suite
from kernelpro.suite.ledger import ProblemRow
from kernelpro.suite.local import LocalBackend
from kernelpro.suite.sources import resolve_sources
from tests.conftest import DATA
from tests.suite.helpers import ledger_with, run_summary


def row(key: str, state: str = "pending", wall_s: float = 0.0, run_wall_s: float | None = None,
        baselines: dict | None = None) -> ProblemRow:
    return ProblemRow(idx=0, key=key, path=f"/p/{key}.py", level=None, task=None, state=state, wall_s=wall_s,
                      result={"wall_seconds": run_wall_s} if run_wall_s is not None else None, baselines=baselines)


def test_before_anything_is_measured_a_problem_costs_the_judges_cap_per_judgment():
    settings = Settings()
    settings.harness.timing_budget_s = 20.0
    cost = problem_cost(row("a"), [row("a")], ["compile_default", "compile_max_autotune_no_cudagraphs"], [], settings)
    assert (cost.start_s, cost.baselines_s, cost.judgment_s, cost.measured, cost.floor_s) == (0.0, 40.0, 20.0,
                                                                                              False, 60.0)
    assert "harness.timing_budget_s" in cost.describe()


def test_a_problems_cost_comes_from_its_baselines_the_suites_verdicts_and_finished_problems_starts():
    settings = Settings()
    finished = [row("done1", "done", wall_s=100.0, run_wall_s=70.0, baselines={"compile_default": {"elapsed_s": 50}}),
                row("done2", "budget", wall_s=40.0, run_wall_s=28.0, baselines={"compile_default": {"elapsed_s": 30}})]
    fresh = row("fresh")
    # not measured itself: the suite's verdicts give a judgment, the other problems' baselines a baseline
    cost = problem_cost(fresh, [*finished, fresh], ["compile_default"], [{"elapsed_s": 4.0}, {"elapsed_s": 8.0},
                                                                         {"elapsed_s": 6.0}], settings)
    assert (cost.start_s, cost.baselines_s, cost.judgment_s, cost.measured) == (12.0, 40.0, 6.0, True)
    # its own baselines judged (an earlier attempt): none left to judge, and a judgment of it is theirs
    retried = row("retried", baselines={"compile_default": {"elapsed_s": 90.0}})
    cost = problem_cost(retried, [*finished, retried], [], [{"elapsed_s": 4.0}], settings)
    assert (cost.baselines_s, cost.judgment_s, cost.floor_s) == (0.0, 90.0, 102.0)


def test_a_problem_whose_least_work_cannot_end_in_what_is_left_is_not_started_and_says_so(tmp_path):
    refs = resolve_sources([DATA / "problems" / "scale_relu.py", DATA / "problems" / "repeated_relu.py"])
    config = SuiteConfig(sources=["x"], device="cpu", baselines=["eager", "compile_default"],
                         totals=Limits(time_s=100.0))
    paths, ledger = create_suite(tmp_path, config, refs)
    # the first problem took 70 s of baselines and 30 s to start and end; 60 s of the budget is spent
    ledger.update("scale_relu", state="done", wall_s=130.0, result=run_summary(False, 1.0) | {"wall_seconds": 100.0},
                  baselines={"compile_default": {"elapsed_s": 70.0}})
    ledger.add_active(60.0)
    status, reason = Driver(paths, ledger, Settings(), LocalBackend([Lane(name="cpu0")])).run()
    waiting = ledger.problem("repeated_relu")
    assert waiting.state == "pending" and not paths.logs.exists()  # no process started
    assert waiting.failure.startswith("not started: it needs about 170 s")  # suite status's note
    assert status == "stopped" and "1 problem(s) not started" in reason and "repeated_relu: it " \
        "needs about 170 s (30 s to start, 70 s of baselines, 70 s for one judgment)" in reason
    assert "s of the suite's 100 s time budget are left" in reason


def test_a_jobs_deadline_is_the_suites_end_or_its_share_and_kills_it_within_the_overrun_allowed():
    assert job_deadline(None, 0.0, 60.0) is None
    assert job_deadline(3600.0, 600.0, 300.0) == Deadline(stop_s=360.0, kill_s=360.0 + 36.0)  # its share's overrun
    assert job_deadline(3600.0, 3500.0, 300.0) == Deadline(stop_s=100.0, kill_s=136.0)  # the suite's end first
    assert job_deadline(300.0, 310.0, 10.0) == Deadline(stop_s=0.0, kill_s=30.0)  # spent already: stop at once
    for total, active, share in ((300.0, 0.0, 300.0), (300.0, 299.0, 1.0), (36000.0, 35000.0, 5000.0)):
        deadline = job_deadline(total, active, share)
        assert active + deadline.kill_s <= total + overrun_allowed_s(total)


def test_the_eta_is_the_problems_left_at_the_mean_time_of_those_finished_within_the_budget():
    rows = [row("a", "done", wall_s=100.0), row("b", "budget", wall_s=200.0), row("c", "failed", wall_s=0.0),
            row("d"), row("e"), row("f", "running")]
    assert eta_s(rows, 2, None, 0.0) == 300.0  # 3 left over 2 lanes: two rounds of 150 s
    assert eta_s(rows, 2, 400.0, 300.0) == 100.0 + 60.0  # the budget's end, with its overrun allowed
    assert eta_s(rows[:1] + rows[3:], 1, None, 0.0) == 300.0
    assert eta_s([row("d")], 1, None, 0.0) is None and eta_s(rows[:3], 1, None, 0.0) == 0.0


def test_a_problem_cut_by_a_budget_keeps_the_reference_and_counts_as_correct_at_one(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"level1/1_improved": {"level": 1, "result": run_summary(True, 2.0)},
                                           "level1/2_failed": {"level": 1, "state": "failed", "failure_kind": "crash",
                                                               "failure": "the optimisation exited with 1"},
                                           "level1/3_cut": {"level": 1, "state": "pending"}})
    driver = Driver(paths, ledger, Settings(), LocalBackend([]))
    stopped = {**run_summary(False, None, correct=0, gpu_s=3.0, usd=0.0), "status": "stopped",
               "stop_reason": "time budget: the next candidate not started (about 90 s a candidate; 4 s of 43 s left)"}
    driver._record(JobOutcome(key="level1/3_cut", ok=True, summary=stopped, wall_s=50.0), Progress(total=3))
    cut = ledger.problem("level1/3_cut")
    assert (cut.state, cut.result["stop_reason"], cut.gpu_s) == ("budget", stopped["stop_reason"], 3.0)
    result = summary(paths, ledger, "completed", "")
    assert (result["problems_scored"], result["correct"], result["budget"], result["improved"]) == (3, 2, 1, 1)
    assert result["fast_p"]["0"] == 2 / 3 and result["fast_p"]["1.0"] == 1 / 3  # kept: correct, not faster
    assert result["geomean_speedup"] == pytest.approx((2.0 * 1.0) ** 0.5)


def test_a_job_stopped_at_its_deadline_keeps_the_reference_unless_it_had_an_improvement(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"a": {"state": "pending"}, "b": {"state": "pending"}})
    driver = Driver(paths, ledger, Settings(), LocalBackend([]))
    why = "stopped at its deadline, 40 s after it started (the suite's time budget)"
    driver._record(JobOutcome(key="a", ok=True, summary=None, wall_s=41.0, budget_stop=why), Progress(total=2))
    driver._record(JobOutcome(key="b", ok=True, summary={**run_summary(True, 1.5), "status": "stopped"}, wall_s=41.0,
                              budget_stop=why), Progress(total=2))
    a, b = ledger.problem("a"), ledger.problem("b")
    assert (a.state, a.result, a.wall_s) == ("budget", {"stop_reason": why}, 41.0)
    assert b.state == "done" and b.result["improved"]  # what it found stands


def test_retry_budget_resumes_the_problems_a_budget_cut_with_their_new_share_added(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"cut": {"state": "budget", "result": {"stop_reason": "time budget"}},
                                           "crashed": {"state": "failed", "failure_kind": "crash"}})
    assert ledger.retry_failed(None) == ["crashed"] and ledger.problem("cut").state == "budget"  # all: the failed
    assert ledger.retry_failed({"budget"}) == ["cut"]
    cut = ledger.problem("cut")
    assert (cut.state, cut.failure_kind, cut.result) == ("pending", "budget", None)
    run_dir = paths.runs / cut.run_id
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"budgets": {"max_iters": 8, "time_s": 43.0}}))
    config = SuiteConfig.model_validate(ledger.suite()["config"]).model_copy(update={"totals": Limits(time_s=600)})
    ledger.set_suite(config=config.model_dump(mode="json"))
    driver = Driver(paths, ledger, Settings(), LocalBackend([Lane(name="cpu0")]))
    command = optimize_command(driver._spec(cut, Lane(name="cpu0"), 1, ledger.problems()))
    # its own 43 s, spent, and the 600 s left to the one problem left
    assert "--resume" in command and command[command.index("--time-budget") + 1] == "643s"
    crashed = ledger.problem("crashed")
    (paths.runs / crashed.run_id).mkdir()
    (paths.runs / crashed.run_id / "run.json").write_text(json.dumps({"budgets": {"max_iters": 8, "time_s": 43.0}}))
    resumed = optimize_command(driver._spec(crashed, Lane(name="cpu0"), 1, ledger.problems()))
    assert "--resume" in resumed and "--time-budget" not in resumed  # resumed for another reason: its own budgets
