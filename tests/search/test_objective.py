"""The search under each objective (time, energy, EDP): the tree's best and finalists, the rewards, the policies
and the planner's leaderboard follow the objective's ratio and call.

The verdicts are real ``EvalResult``s carrying the energy fields the judge fills from NVML readings on a GPU
(that measurement is tested under ``tests/harness/test_energy*.py``)."""

from __future__ import annotations

import pytest

from kernelpro.config import Settings
from kernelpro.graphs.views import best_under_objective, leaderboard_text
from kernelpro.harness.result import EvalResult, Timing
from kernelpro.search import objective as objectives
from kernelpro.search.greedy import Greedy
from kernelpro.search.mcts import MCTS
from kernelpro.search.policy import Rules
from kernelpro.search.rewards import CORRECT_FLOOR, RewardScale
from kernelpro.search.tree import Idea, VariantTree
from tests.conftest import problem

SLOWER_LEANER = "the same work at a lower clock: slower, less energy"
FASTER_HUNGRIER = "a wider kernel: faster, more energy"


def timing(ms: float, joules: float | None = None, watts: float | None = None) -> Timing:
    return Timing(median_ms=ms, p10_ms=ms * 0.98, p90_ms=ms * 1.02, mean_ms=ms, trials=50, method="cuda_events",
                  energy_j=joules, power_w=watts)


def verdict(speedup: float, call: str, energy: float | None = None, energy_call: str | None = None,
            edp: float | None = None, edp_call: str | None = None) -> EvalResult:
    """A correct verdict with its speedup and, when given, its energy and EDP ratios (each with a 5% interval)."""
    ref_j = 0.02
    return EvalResult(
        status="ok", correct=True, speedup=speedup, speedup_ci95=[speedup * 0.97, speedup * 1.03],
        speed_verdict=call, energy_ratio=energy, energy_ci95=[energy * 0.95, energy * 1.05] if energy else None,
        energy_verdict=energy_call, edp_ratio=edp, edp_ci95=[edp * 0.95, edp * 1.05] if edp else None,
        edp_verdict=edp_call, candidate=timing(1.0 / speedup, ref_j / energy if energy else None, 410.0),
        reference=timing(1.0, ref_j if energy else None, 520.0), device="cuda")


def tree_of(objective: str, *results: tuple[str, EvalResult]) -> VariantTree:
    tree = VariantTree.with_root(problem("scale_relu").source)
    tree.objective = objectives.check(objective)
    for idea, result in results:
        child = tree.spawn(tree.root.id, f"# {idea}\n", idea, "llm", 1)
        child.record(result)
    return tree


def trade_off(objective: str) -> VariantTree:
    """One variant faster but hungrier, one slower but leaner (in energy and in EDP)."""
    return tree_of(objective,
                   (FASTER_HUNGRIER, verdict(1.6, "faster", 0.8, "more", 1.28, "less")),
                   (SLOWER_LEANER, verdict(0.9, "slower", 1.3, "less", 1.17, "less")))


def by_idea(tree: VariantTree, idea: str):
    return next(v for v in tree if v.idea == idea)


def test_the_best_follows_the_objective():
    assert trade_off("time").best().idea == FASTER_HUNGRIER
    assert trade_off("energy").best().idea == SLOWER_LEANER  # faster, but more energy: not best under energy
    assert trade_off("edp").best().idea == FASTER_HUNGRIER  # 1.28 beats 1.17 in EDP


def test_a_faster_variant_that_uses_more_energy_does_not_improve_under_energy():
    tree = trade_off("energy")
    hungry = by_idea(tree, FASTER_HUNGRIER)
    assert hungry.improves and not hungry.improves_under("energy")
    assert by_idea(tree, SLOWER_LEANER).improves_under("energy")
    assert tree.finalists(2)[0].idea == SLOWER_LEANER
    assert [v.idea for v in tree.correct()] == [SLOWER_LEANER, FASTER_HUNGRIER]


def test_no_best_when_no_variant_uses_less_energy_beyond_its_interval():
    tree = tree_of("energy", ("within the noise", verdict(1.6, "faster", 1.01, "same", 1.6, "less")),
                   ("too noisy", verdict(1.2, "faster", 1.4, "uncertain", 1.2, "uncertain")),
                   ("not measured", verdict(1.3, "faster")))
    assert tree.best() is None  # keep the reference, exactly as under time
    tree.objective = "time"
    assert tree.best() is not None


def test_the_finalists_rejudgment_decides_under_energy():
    tree = trade_off("energy")
    lean = by_idea(tree, SLOWER_LEANER)
    lean.final = verdict(0.9, "slower", 1.02, "same").model_dump(mode="json")
    assert tree.best() is None  # only the finalists count once re-judged, and this one's saving did not hold


def test_edp_uses_its_own_verdict_even_from_the_details_of_older_results():
    result = verdict(1.1, "faster", 1.2, "less", 1.3, None)
    result.details["energy"] = {"edp": {"verdict": "less"}}
    assert objectives.improves(result, "edp")
    assert not objectives.improves(result.model_copy(update={"correct": False}), "edp")
    assert not objectives.improves(result.model_copy(update={"contended": True}), "energy")


def test_rewards_are_the_log_of_the_objectives_ratio():
    for objective, winner in (("time", FASTER_HUNGRIER), ("energy", SLOWER_LEANER), ("edp", FASTER_HUNGRIER)):
        tree = trade_off(objective)
        scale = RewardScale.of(tree)
        rewards = {v.idea: scale(v) for v in tree if v.kind != "reference"}
        assert max(rewards, key=rewards.get) == winner, objective
        assert rewards[winner] == pytest.approx(1.0)
    energy = RewardScale.of(trade_off("energy"))
    assert (energy.low, energy.high) == pytest.approx((-0.22314, 0.26236), abs=1e-4)  # log 0.8, log 1.3


def test_a_correct_variant_without_energy_readings_earns_the_floor_not_zero():
    tree = tree_of("energy", ("not measured", verdict(1.3, "faster")),
                   ("wrong", EvalResult(status="incorrect", reason="mismatch")))
    scale = RewardScale.of(tree)
    assert scale(by_idea(tree, "not measured")) == CORRECT_FLOOR
    assert scale(by_idea(tree, "wrong")) == 0.0
    assert by_idea(tree, "not measured").ratio("energy") is None


def test_greedy_and_mcts_grow_the_leanest_variant_under_energy():
    for objective, first in (("time", FASTER_HUNGRIER), ("energy", SLOWER_LEANER)):
        for policy in (Greedy(Rules()), MCTS(Rules(), c_puct=0.0)):
            tree = trade_off(objective)
            for variant in tree:
                variant.ideas = [Idea(title="next", description=f"next from {variant.id}", prior=0.5)]
            proposal = policy.propose(tree, 1)
            assert tree.get(proposal[0].parent_id).idea == first, (objective, policy.name)


def test_the_planners_leaderboard_shows_the_objectives_figure_first():
    text = leaderboard_text(trade_off("energy"))
    lines = text.splitlines()
    assert "energy 1.30x [1.23-1.37] less, time 0.90x" in lines[0] and SLOWER_LEANER in lines[0]
    assert "energy 0.80x [0.76-0.84] more, time 1.60x" in lines[1]
    assert "energy" not in leaderboard_text(tree_of("time", ("plain", verdict(1.6, "faster"))))


def test_a_slower_energy_best_is_reported_as_what_it_is():
    tree = trade_off("energy")
    text = best_under_objective(tree.best(), "energy")
    assert text.startswith("energy 1.30x [1.23-1.37] less (time 0.90x [0.87-0.93] slower")
    assert "an energy saving, not a speedup" in text


def test_energy_text_gives_joules_per_call_and_watts():
    text = objectives.energy_text(verdict(0.9, "slower", 1.25, "less", 1.1, "less"))
    assert text.startswith("16 mJ/call at 410 W vs reference 20 mJ/call at 520 W; energy 1.25x")
    assert "EDP 1.10x [1.04-1.16] less" in text
    assert objectives.energy_text(verdict(1.2, "faster")) == ""


def test_an_energy_objective_turns_the_judges_energy_readings_on(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert not Settings().harness.energy
    monkeypatch.setenv("KERNELPRO_SEARCH__OBJECTIVE", "edp")
    assert Settings().harness.energy
    with pytest.raises(ValueError, match="unknown objective"):
        objectives.check("watts")


def test_the_planner_is_told_what_the_leaderboard_ranks_by():
    from kernelpro.agents.planner import PlannerInput
    from kernelpro.agents.templates import render
    from kernelpro.graphs.views import LEADERBOARD_HEADINGS

    fields = {"problem_name": "scale_relu", "problem_source": "x", "device": "cuda", "gpu": "H200",
              "variant_label": "the reference", "variant_summary": "-", "profile": "-", "lessons": "-",
              "leaderboard": leaderboard_text(trade_off("energy"))}
    timed = render("planner_task", **PlannerInput(**fields).model_dump())
    assert "## Earlier variants, fastest first (speedup over the reference; failures say why)" in timed
    energy = render("planner_task", **PlannerInput(**fields, leaderboard_heading=LEADERBOARD_HEADINGS["energy"])
                    .model_dump())
    assert "## Earlier variants, least energy first" in energy and "energy 1.30x" in energy
