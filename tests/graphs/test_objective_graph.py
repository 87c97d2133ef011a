"""The optimisation graph under an energy objective: the objective enters the state at the baseline, the planner
is told what the leaderboard ranks by, and a candidate without energy readings is never the best."""

from __future__ import annotations

from kernelpro.search.tree import VariantTree
from tests.graphs.helpers import HONEST, code_reply, make_context, plan_reply, review_reply, run, scripted_agents


def test_a_faster_candidate_without_less_energy_is_not_the_best_under_energy(settings, tmp_path):
    settings.search.objective = "energy"  # on the CPU the judge takes no NVML readings: no energy call at all
    agents = scripted_agents(planner=[plan_reply("fuse relu and scale")], coder=[code_reply(HONEST)],
                             critic=[review_reply()])
    graph, config = run(make_context(settings, tmp_path, agents, max_iters=1))
    state = graph.get_state(config).values
    assert state["objective"] == "energy" and "objective energy" in state["events"][0]
    tree = VariantTree.from_state(state["variants"], state["objective"])
    judged = next(v for v in tree if v.kind != "reference")
    assert judged.correct and judged.ratio("energy") is None
    assert tree.best() is None  # keep the reference: nothing measured less energy
    assert state["events"][-1].endswith("no improvement: keep the reference (no correct candidate is measurably "
                                        "lower in energy)")
    assert "## Earlier variants, least energy first" in agents["planner"].requests[0].text
