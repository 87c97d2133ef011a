"""The time budget's arithmetic: what a candidate costs, how many to start, the finalists paid for out of it,
when work in flight stops; and the words a run ends with when a busy machine is why nothing counts."""

from __future__ import annotations

from kernelpro.config import Settings
from kernelpro.graphs.optimize import unimproved_reason
from kernelpro.graphs.time_budget import Costs, TimeBudget, run_costs
from kernelpro.harness.deadline import planned_calls
from kernelpro.harness.result import EvalResult, Timing
from kernelpro.runs.overrun import overrun_allowed_s
from kernelpro.search.tree import VariantTree
from tests.conftest import candidate, problem

SCALE_RELU = problem("scale_relu").source
HONEST = candidate("honest_scale_relu")


def timing(ms: float) -> Timing:
    return Timing(median_ms=ms, p10_ms=ms, p90_ms=ms, mean_ms=ms, trials=10, method="cpu")


def judged_tree(*verdicts: EvalResult) -> VariantTree:
    tree = VariantTree.with_root(SCALE_RELU)
    for i, result in enumerate(verdicts):
        child = tree.spawn(tree.root.id, f"# {i}\n{HONEST}", f"idea {i}", f"recipe:r{i}")
        tree.record(child.id, result)
    return tree


def ok(elapsed_s: float, speedup: float = 0.8, verdict: str = "slower", contended: bool = False,
       reference_ms: float = 0.02) -> EvalResult:
    return EvalResult(status="ok", correct=True, speedup=speedup, speedup_ci95=[speedup * 0.95, speedup * 1.05],
                      speed_verdict=verdict, contended=contended, elapsed_s=elapsed_s,
                      candidate=timing(reference_ms / speedup), reference=timing(reference_ms))


def test_before_any_verdict_a_candidate_costs_the_judges_timing_cap():
    settings = Settings()
    settings.harness.timing_budget_s, settings.search.finalist_rounds_factor = 20.0, 3.0
    costs = run_costs(VariantTree.with_root(SCALE_RELU), 0.0, 0, settings)
    assert costs == Costs(judgment_s=20.0, candidate_s=20.0, finalist_s=60.0, measured=False)


def test_costs_come_from_the_verdicts_durations_and_the_loops_time_per_candidate():
    settings = Settings()
    settings.search.finalist_rounds_factor = 3.0
    tree = judged_tree(ok(4.0), ok(6.0))
    costs = run_costs(tree, spent_s=30.0, judged=2, settings=settings)
    assert (costs.judgment_s, costs.candidate_s, costs.finalist_s, costs.measured) == (5.0, 15.0, 15.0, True)
    # a slow reference: a judgment makes at least its planned calls at the reference's speed
    slow = run_costs(judged_tree(ok(1.0, reference_ms=500.0)), spent_s=1.0, judged=1, settings=settings)
    assert slow.judgment_s == planned_calls(settings.harness) * 0.5


def test_an_answered_verdict_costs_nothing():
    answered = ok(50.0)
    answered.details["answered_by"] = "abc"
    costs = run_costs(judged_tree(ok(2.0), answered), spent_s=2.0, judged=1, settings=Settings())
    assert costs.judgment_s == 2.0


def test_a_one_second_budget_judges_one_candidate_then_nothing_more():
    unmeasured = Costs(judgment_s=20.0, candidate_s=20.0, finalist_s=60.0, measured=False)
    first = TimeBudget(budget_s=1.0, spent_s=0.1, costs=unmeasured, finalists=3)
    assert first.batch(4, finalists_now=0, judged_any=False) == 1  # the first judgment measures: it runs
    measured = Costs(judgment_s=5.0, candidate_s=6.0, finalist_s=15.0, measured=True)
    after = TimeBudget(budget_s=1.0, spent_s=6.0, costs=measured, finalists=3)
    assert after.batch(4, finalists_now=1, judged_any=True) == 0
    assert after.finalists_s(1) > after.left_s  # and the finalists' re-judgment does not fit either
    assert "the next candidate not started" in after.not_started("the next candidate")


def test_a_batch_leaves_room_for_the_finalists_re_judgment():
    costs = Costs(judgment_s=10.0, candidate_s=10.0, finalist_s=30.0, measured=True)
    budget = TimeBudget(budget_s=200.0, spent_s=50.0, costs=costs, finalists=3)  # 150 s left
    # 4 candidates (40 s) and 3 finalists (90 s) fit in 150 s
    assert budget.batch(4, finalists_now=0, judged_any=True) == 4
    # 110 s left: 2 candidates (20 s) and 3 finalists (90 s); a third candidate would overrun
    tighter = TimeBudget(budget_s=200.0, spent_s=90.0, costs=costs, finalists=3)
    assert tighter.batch(4, finalists_now=2, judged_any=True) == 2
    none_kept = TimeBudget(budget_s=200.0, spent_s=90.0, costs=costs, finalists=0)
    assert none_kept.batch(4, finalists_now=2, judged_any=True) == 4  # no finalists to pay for


def test_work_in_flight_stops_within_the_overrun_allowed():
    costs = Costs(judgment_s=10.0, candidate_s=10.0, finalist_s=30.0, measured=True)
    assert overrun_allowed_s(1.0) == 60.0 and overrun_allowed_s(36000.0) == 720.0
    assert TimeBudget(budget_s=100.0, spent_s=40.0, costs=costs, finalists=3).in_flight_until(now=1000.0) == 1090.0
    spent = TimeBudget(budget_s=36000.0, spent_s=36010.0, costs=costs, finalists=3)
    assert spent.in_flight_until(now=5.0) == 5.0 + 360.0  # past the budget: half the overrun allowed, no more


def test_a_faster_candidate_timed_on_a_busy_machine_is_named_as_the_reason():
    tree = judged_tree(ok(1.0, speedup=1.12, verdict="faster", contended=True), ok(1.0, speedup=0.9, verdict="same"))
    busy = next(v for v in tree if v.speedup == 1.12)
    reason = unimproved_reason(tree)
    assert tree.best() is None and f"{busy.id} at 1.12x" in reason
    assert "busy machine" in reason and "run again on a quiet machine" in reason
    assert unimproved_reason(judged_tree(ok(1.0, verdict="same"))) == "no correct candidate is measurably faster"


def test_before_any_candidate_the_baselines_judgments_are_what_a_judgment_costs():
    settings = Settings()
    settings.search.finalist_rounds_factor = 3.0
    baselines = [{"elapsed_s": 30.0, "reference_ms": 0.02}, {"elapsed_s": 50.0}, {"status": "ok"}]
    costs = run_costs(VariantTree.with_root(SCALE_RELU), 0.0, 0, settings, baselines)
    assert costs == Costs(judgment_s=40.0, candidate_s=40.0, finalist_s=120.0, measured=True)
    # measured, so a budget they leave too little of judges no candidate at all
    assert TimeBudget(budget_s=60.0, spent_s=80.0, costs=costs, finalists=0).batch(4, 0, costs.measured) == 0
    # a candidate's own verdict, once there, is what counts
    assert run_costs(judged_tree(ok(2.0)), 2.0, 1, settings, baselines).judgment_s == 2.0
