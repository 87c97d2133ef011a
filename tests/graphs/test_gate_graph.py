"""The forecast gate in the loop: the coder writes several candidates per expansion, the gate measures the
forecast best, the others are set aside with their forecasts and never become the best."""

from __future__ import annotations

from kernelpro.agents.forecaster import LLMForecaster
from kernelpro.agents.protocol import FINAL_ANSWER
from kernelpro.forecast.gate import SKIPPED, ForecastGate, skipped
from kernelpro.graphs.run_outputs import _gate_summary
from kernelpro.search.tree import VariantTree
from tests.graphs.helpers import HONEST, WRONG, code_reply, make_context, plan_reply, review_reply, run, scripted_agents
from tests.support.scripted_model import ScriptedChatModel, tool_call

SLOWER = HONEST.replace("torch.clamp(x, min=0.0) * self.scale", "torch.relu(x.clone()) * self.scale")


def forecast_by_code(messages):
    """A forecaster that likes the fused clamp, dislikes the clone and is unsure of the rest."""
    task = messages[-1].content
    probs = ([0, 0, 0, 0, 0, 1, 0, 0] if "torch.clamp(x, min=0.0)" in task else
             [1, 0, 0, 0, 0, 0, 0, 0] if "x.clone()" in task else [0, 0, 1, 1, 0, 0, 0, 0])
    return tool_call(FINAL_ANSWER, {"probabilities": probs, "reasoning": "read the code"})


def test_select_measures_the_forecast_best_of_each_expansion(settings, tmp_path):
    settings.forecast.proposals_per_expansion = 3
    settings.search.finalists = 0
    agents = scripted_agents(planner=[plan_reply("fuse relu and scale")],
                             coder=[code_reply(HONEST), code_reply(WRONG), code_reply(SLOWER)],
                             critic=[review_reply()])
    forecaster = ScriptedChatModel(script=[forecast_by_code] * 3)
    context = make_context(settings, tmp_path, agents, max_iters=1)
    context.gate = ForecastGate(LLMForecaster(forecaster, "NVIDIA H200", mode="native"), "select", select_k=1)
    graph, config = run(context)
    state = graph.get_state(config).values
    tree = VariantTree.from_state(state["variants"])
    children = [v for v in tree if v.kind != "reference"]
    assert len(children) == 3 and all(v.forecast is not None for v in children)
    [measured] = [v for v in children if v.result is not None]
    # the best, if the timing calls it faster on this machine, can only be the one measured
    assert measured.source == HONEST and (tree.best() is None or tree.best().id == measured.id)
    assert {v.source for v in skipped(tree)} == {WRONG, SLOWER}
    assert all(v.failure.startswith(SKIPPED) and "expected class" in v.failure for v in skipped(tree))
    assert sum(1 for e in state["events"] if e.startswith("gate (forecast-select (llm))")) == 2
    assert len(forecaster.requests) == 3 and "NVIDIA H200" in forecaster.requests[0].text
    summary = _gate_summary(context.gate, tree)  # what the report says the gate skipped and saved
    assert summary["gate_skipped"] == 2 and summary["gate_saved_s"] == 2 * measured.result["elapsed_s"] > 0


def test_selective_accepts_confident_forecasts_without_measuring_them(settings, tmp_path):
    settings.forecast.proposals_per_expansion = 3
    agents = scripted_agents(planner=[plan_reply("fuse relu and scale")],
                             coder=[code_reply(HONEST), code_reply(WRONG), code_reply(SLOWER)],
                             critic=[review_reply()])
    context = make_context(settings, tmp_path, agents, max_iters=1)
    model = ScriptedChatModel(script=[forecast_by_code] * 3)
    context.gate = ForecastGate(LLMForecaster(model, "H200", mode="native"), "selective", threshold=0.9)
    graph, config = run(context)
    tree = VariantTree.from_state(graph.get_state(config).values["variants"])
    # the two confident forecasts (the fused clamp, the clone) are taken as forecast; the unsure one is measured
    assert {v.source for v in skipped(tree)} == {HONEST, SLOWER}
    assert [v.source for v in tree if v.result is not None] == [WRONG]
    assert all("accepted as forecast" in v.failure for v in skipped(tree)) and tree.best() is None
    assert tree.children(tree.root.id) == [v for v in tree if v.source == WRONG]  # the policies see one child
    assert len(tree.children(tree.root.id, gated=True)) == 3
