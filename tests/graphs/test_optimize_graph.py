"""The optimisation graph's routes with scripted agents, the real CPU judge and LangGraph checkpoints."""

from __future__ import annotations

import threading

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from kernelpro.forecast.classes import speedup_class
from kernelpro.forecast.dataset import read_rows
from kernelpro.graphs.optimize import builder
from kernelpro.llm.models import UsageMeter
from kernelpro.search.tree import VariantTree
from tests.conftest import candidate
from tests.graphs.helpers import (
    HONEST,
    REUSES_MODEL,
    WRONG,
    code_reply,
    make_context,
    plan_reply,
    results_log,
    review_reply,
    run,
    scripted_agents,
)


def state_of(graph, config) -> dict:
    return graph.get_state(config).values


def test_one_iteration_plans_codes_judges_critiques_and_stops_at_the_iteration_budget(settings, tmp_path):
    agents = scripted_agents(planner=[plan_reply("fuse relu and scale")], coder=[code_reply(HONEST)],
                             critic=[review_reply()])
    context = make_context(settings, tmp_path, agents, max_iters=1)
    graph, config = run(context)
    state = state_of(graph, config)
    assert state["status"] == "completed" and "iteration budget" in state["stop_reason"]
    tree = VariantTree.from_state(state["variants"])
    best = tree.best()
    assert best is not None and best.result["status"] == "ok" and best.speedup > 0
    assert best.lesson == "Fusing ReLU and scale saves one pass." and best.techniques == ["fusion"]
    # the planner saw the problem and the coder had its tools; the judge's verdict reached the critic
    assert "torch.relu(x) * self.scale" in agents["planner"].requests[0].text
    assert "not profiled: Nsight Compute profiles need a GPU" in agents["planner"].requests[0].text  # and why
    coder_tools = set(agents["coder"].bound_tools[0])  # a CPU run: no CUDA compile or CUTLASS tools offered
    assert {"memory_search", "final_answer"} <= coder_tools and not {"compile_check", "cutlass_search"} & coder_tools
    assert "judge_candidate" not in agents["coder"].bound_tools[0]  # only the graph judges
    assert "fuse relu and scale" in agents["coder"].requests[0].text
    assert "Judge: ok" in agents["critic"].requests[0].text
    logged, final = results_log(context)
    assert logged["variant"] == best.id and logged["status"] == "ok"
    # the finalist was judged again, head to head with the reference, and that verdict decides the best
    assert final["variant"] == f"{best.id}.final" and final["final_of"] == best.id
    assert best.final is not None and best.final["speed_verdict"] == "faster"
    assert any(e.startswith("final ") for e in state["events"])
    assert (context.files.candidates / f"{best.id}.py").read_text() == HONEST


def test_a_run_whose_only_candidate_measured_slower_re_judges_nothing(settings, tmp_path):
    pause = "        time.sleep(0.002)  # the same work, and a pause\n"
    slower = HONEST.replace("import torch\n", "import time\n\nimport torch\n").replace(
        "        return torch.clamp", pause + "        return torch.clamp")
    agents = scripted_agents(planner=[plan_reply("wait a little")], coder=[code_reply(slower)],
                             critic=[review_reply()])
    context = make_context(settings, tmp_path, agents, max_iters=1)
    graph, config = run(context)
    state = state_of(graph, config)
    (child,) = [v for v in VariantTree.from_state(state["variants"]) if v.kind != "reference"]
    assert child.result["speed_verdict"] == "slower" and child.final is None, child.result["message"]
    assert [e for e in state["events"] if "re-judged" in e] == [
        "no finalist re-judged: the 1 correct candidate(s) each measured slower than the reference beyond its "
        "interval"]
    assert [r["variant"] for r in results_log(context)] == [child.id]


def test_a_wrong_candidate_is_judged_reviewed_and_never_best(settings, tmp_path):
    agents = scripted_agents(planner=[plan_reply("clamp")], coder=[code_reply(WRONG)], critic=[review_reply()])
    graph, config = run(make_context(settings, tmp_path, agents, max_iters=1))
    tree = VariantTree.from_state(state_of(graph, config)["variants"])
    (child,) = [v for v in tree if v.kind != "reference"]
    assert child.result["status"] == "incorrect" and child.speedup is None and tree.best() is None


def test_the_coder_fixes_what_the_static_guards_reject(settings, tmp_path):
    agents = scripted_agents(planner=[plan_reply("reuse")], coder=[code_reply(REUSES_MODEL), code_reply(HONEST)],
                             critic=[review_reply()])
    graph, config = run(make_context(settings, tmp_path, agents, max_iters=1))
    assert "reference_reuse" in agents["coder"].requests[1].text
    best = VariantTree.from_state(state_of(graph, config)["variants"]).best()
    assert best is not None and best.source == HONEST


def test_a_flagged_result_is_kept_but_not_best(settings, tmp_path):
    agents = scripted_agents(planner=[plan_reply("fuse")], coder=[code_reply(HONEST)],
                             critic=[review_reply("suspicious")])
    graph, config = run(make_context(settings, tmp_path, agents, max_iters=1))
    state = state_of(graph, config)
    tree = VariantTree.from_state(state["variants"])
    (child,) = [v for v in tree if v.kind != "reference"]
    assert child.flagged and child.speedup is not None and tree.best() is None
    assert any("flagged by the critic" in e for e in state["events"])


def test_no_candidate_on_a_degenerate_problem_is_an_improvement(settings, tmp_path):
    """The reference's output is constant: a cached-zeros candidate is correct and fast, and counts for nothing."""
    zeros = candidate("suspect_constant_zeros")
    agents = scripted_agents(planner=[plan_reply("return the constant")], coder=[code_reply(zeros)])
    graph, config = run(make_context(settings, tmp_path, agents, max_iters=3, problem_name="constant_gelu"))
    state = state_of(graph, config)
    tree = VariantTree.from_state(state["variants"])
    (child,) = [v for v in tree if v.kind != "reference"]
    assert child.result["status"] == "ok" and child.speedup is not None  # correct and timed, as judged
    assert tree.best() is None and tree.correct() == []
    assert tree.problem_finding()["reason"] == "constant_output"
    assert "degenerate (constant_output)" in state["stop_reason"]
    assert any(e.startswith(f"{child.id} does not count: the problem is degenerate") for e in state["events"])
    assert len(agents["planner"].requests) == 1  # the search stopped instead of spending more calls


def test_malformed_planner_replies_end_the_search_cleanly(settings, tmp_path):
    agents = scripted_agents(planner=["I would fuse things.", "Still thinking.", "Nothing structured."])
    graph, config = run(make_context(settings, tmp_path, agents, max_iters=2))
    state = state_of(graph, config)
    assert state["status"] == "completed" and state["stop_reason"] == "nothing left worth trying"
    assert state["iteration"] == 0 and len(agents["planner"].requests) == 3
    assert "final_answer" in agents["planner"].requests[1].text


def test_interactive_run_interrupts_at_plan_and_code_and_resumes_with_the_users_edit(settings, tmp_path):
    agents = scripted_agents(planner=[plan_reply("fuse")], coder=[code_reply(WRONG)], critic=[review_reply()])
    context = make_context(settings, tmp_path, agents, max_iters=1, interactive=True)
    saver = InMemorySaver()
    graph, config = run(context, saver=saver)
    (asked,) = graph.get_state(config).interrupts
    assert asked.value["kind"] == "plan" and asked.value["ideas"][0]["title"] == "fuse"
    graph, config = run(context, Command(resume={"action": "approve"}), saver=saver)
    (asked,) = graph.get_state(config).interrupts
    assert asked.value["kind"] == "code" and asked.value["source"] == WRONG
    graph, config = run(context, Command(resume={"action": "edit", "source": HONEST}), saver=saver)
    state = state_of(graph, config)
    best = VariantTree.from_state(state["variants"]).best()
    assert best is not None and best.source == HONEST
    assert len(agents["planner"].requests) == 1 and len(agents["coder"].requests) == 1  # nothing paid twice


def test_stopping_at_the_plan_stops_the_run(settings, tmp_path):
    agents = scripted_agents(planner=[plan_reply("fuse")])
    context = make_context(settings, tmp_path, agents, max_iters=3, interactive=True)
    saver = InMemorySaver()
    run(context, saver=saver)
    graph, config = run(context, Command(resume={"action": "stop"}), saver=saver)
    state = state_of(graph, config)
    assert state["status"] == "stopped" and state["iteration"] == 0 and not results_log(context)


def test_a_spent_time_budget_stops_before_any_model_call(settings, tmp_path):
    agents = scripted_agents()
    # a positive budget, already spent before the first step
    graph, config = run(make_context(settings, tmp_path, agents, max_iters=5, time_s=1e-9))
    state = state_of(graph, config)
    assert state["status"] == "stopped" and "time budget" in state["stop_reason"]
    assert not agents["planner"].requests


def test_the_baselines_judged_before_the_search_count_against_the_time_budget(settings, tmp_path):
    """Their judgments are the run's measured cost of one: a budget they spent starts no candidate."""
    context = make_context(settings, tmp_path, None, max_iters=5, time_s=30.0)
    context.files.baselines_path.write_text('{"compile_default": {"status": "ok", "elapsed_s": 40.0}}')
    graph, config = run(context)
    state = state_of(graph, config)
    assert state["status"] == "stopped" and state["iteration"] == 0 and not results_log(context)
    assert state["stop_reason"].startswith("time budget: the next candidate not started (about 40 s a candidate; "
                                           "0 s of 30 s left)")


def test_a_spent_dollar_budget_stops_the_run_mid_iteration(settings, tmp_path):
    settings.llm.prices = {"scripted": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}}
    settings.llm.budget_usd = 0.004  # one call costs 1000 * 3e-6 + 200 * 15e-6 = $0.006
    meter = UsageMeter(settings)
    agents = scripted_agents(meter, planner=[plan_reply("fuse")], coder=[code_reply(HONEST)])
    graph, config = run(make_context(settings, tmp_path, agents, max_iters=3, meter=meter))
    state = state_of(graph, config)
    assert state["status"] == "stopped" and "LLM budget" in state["stop_reason"]
    assert state["usage"]["total"]["cost_usd"] >= 0.004
    assert not agents["coder"].requests  # no call is sent once the budget is spent


def test_without_a_model_the_recipes_are_planned_and_a_typed_idea_is_refused_up_front(settings, tmp_path):
    context = make_context(settings, tmp_path, None, max_iters=2, interactive=True)
    saver = InMemorySaver()
    graph, config = run(context, saver=saver)
    (asked,) = graph.get_state(config).interrupts
    assert asked.value["ideas"][0]["title"] == "inference_mode"  # the CPU recipe with the highest prior
    assert asked.value["editable"] is False and "no language model" in asked.value["not_editable"]
    graph, config = run(context, Command(resume={"action": "edit", "ideas": [{"title": "write a Triton kernel"}]}),
                        saver=saver)
    (asked,) = graph.get_state(config).interrupts  # asked again, saying why; the recipes are still the plan
    assert asked.value["notice"].startswith("edit refused: no language model is configured")
    assert asked.value["ideas"][0]["title"] == "inference_mode"
    tree = VariantTree.from_state(state_of(graph, config)["variants"])
    assert all(i.origin.startswith("recipe:") for i in tree.root.ideas)  # the typed idea went nowhere
    graph, config = run(context, Command(resume={"action": "stop"}), saver=saver)
    assert state_of(graph, config)["status"] == "stopped" and state_of(graph, config)["idea_source"] == "recipes"


def test_one_judging_worker_serves_the_whole_run(settings, tmp_path):
    variant = HONEST.replace("torch.clamp(x, min=0.0) * self.scale", "torch.relu(x) * self.scale")
    agents = scripted_agents(planner=[plan_reply("fuse", "relu"), plan_reply("again")],
                             coder=[code_reply(HONEST), code_reply(variant)], critic=[review_reply(), review_reply()])
    context = make_context(settings, tmp_path, agents, max_iters=2)
    graph, config = run(context)
    assert state_of(graph, config)["iteration"] == 2
    stats = context.evaluate.stats
    assert stats.judged == 2  # one pipeline judged both: the run did not start a new one per candidate
    assert stats.worker_starts == 1 + len(stats.restarts)  # and its worker was reused unless it had to restart


def test_the_same_candidate_twice_is_judged_once(settings, tmp_path):
    again = "# the same code, written again\n" + HONEST.replace("\n\n\n", "\n\n")
    agents = scripted_agents(planner=[plan_reply("fuse", "fuse again"), plan_reply("fuse once more")],
                             coder=[code_reply(HONEST), code_reply(again)], critic=[review_reply(), review_reply()])
    settings.forecast.dataset = tmp_path / "judged.jsonl"
    context = make_context(settings, tmp_path, agents, max_iters=2)
    graph, config = run(context)
    state = state_of(graph, config)
    # the judged-candidate dataset has the one judgment, with its class (finalists' re-judgments are not rows)
    [row] = read_rows(settings.forecast.dataset)
    assert (row.problem_name, row.verdict, row.origin, row.hardware) == ("repeated_relu", "ok", "optimize", "cpu")
    assert row.speed_class == speedup_class(row.speedup) and row.candidate_source in (HONEST, again)
    # the two are written in parallel, so either may hold either source; the batch judges the first once
    first, second = [v for v in VariantTree.from_state(state["variants"]) if v.kind != "reference"]
    assert {first.source, second.source} == {HONEST, again}
    assert second.result["details"].pop("answered_by") == first.id  # the one judgment, counted once
    assert second.result == first.result
    assert any(f"the same candidate as {first.id}" in e for e in state["events"])
    # one judgment for the two candidates, one for the finalist's re-judgment (in its own pipeline)
    assert context.evaluate.stats.judged == 1
    assert [e for e in state["events"] if e.startswith("finalists re-judged")] == [
        f"finalists re-judged head to head with the reference: {first.id}"]


def test_a_re_judgment_that_breaks_leaves_the_first_verdicts_deciding(settings, tmp_path):
    agents = scripted_agents(planner=[plan_reply("fuse")], coder=[code_reply(HONEST)], critic=[review_reply()])
    context = make_context(settings, tmp_path, agents, max_iters=1)

    def broken(problem, sources, until=None):
        raise RuntimeError("no worker could start")

    context.evaluate.rejudge = broken
    graph, config = run(context)
    state = state_of(graph, config)
    assert state["status"] == "completed"
    assert any("finalists could not be re-judged (RuntimeError: no worker could start)" in e for e in state["events"])
    tree = VariantTree.from_state(state["variants"])
    judged = next(v for v in tree if v.kind != "reference")
    assert judged.result is not None and judged.final is None  # the first verdict still decides
    best = tree.best()  # whether it is faster depends on this machine's load, not on the graph
    assert (best.id if best else None) == (judged.id if judged.improves else None)


class Killed(RuntimeError):
    """Stands for the process dying: the checkpoint keeps what finished before it."""


def dies_once_the_other_branch_is_saved(saver: InMemorySaver, source: str):
    """A coder reply that waits until the other branch's variant (with ``source``) is in the checkpoint's pending
    writes, then dies: a kill that comes after one branch finished and before the other did."""

    def killed(messages):
        def saved() -> bool:
            for writes in list(saver.writes.values()):
                for _, channel, value, *_ in list(writes.values()):
                    found = saver.serde.loads_typed(value) if channel == "variants" else {}
                    if any(v.get("source") == source for v in found.values()):
                        return True
            return False

        for _ in range(3000):
            if saved():
                break
            threading.Event().wait(0.01)
        raise Killed("the run died while this candidate was being written")

    return killed


def test_a_run_killed_mid_batch_resumes_without_rewriting_or_rejudging_anything(settings, tmp_path):
    """Two coder branches of one batch: one finishes, the run dies in the other; the resumed run writes only the
    unfinished one, then judges the batch once."""
    settings.search.batch_size = 2
    variant = HONEST.replace("torch.clamp(x, min=0.0) * self.scale", "torch.relu(x) * self.scale")
    saver = InMemorySaver()
    agents = scripted_agents(planner=[plan_reply("fuse", "relu")],
                             coder=[code_reply(HONEST), dies_once_the_other_branch_is_saved(saver, HONEST),
                                    code_reply(variant)],
                             critic=[review_reply(), review_reply()])
    context = make_context(settings, tmp_path, agents, max_iters=2)
    graph = builder().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": context.budgets.recursion_limit}
    with pytest.raises(Killed):
        graph.invoke({"run_id": "run-test"}, config, context=context, durability="sync")
    waiting = VariantTree.from_state(state_of(graph, config)["variants"]).pending()
    assert len(waiting) == 2 and not results_log(context)  # the batch is in the checkpoint, unjudged
    graph.invoke(None, config, context=context, durability="sync")
    state = state_of(graph, config)
    assert state["status"] == "completed" and state["iteration"] == 2
    assert len(agents["coder"].requests) == 3  # the finished branch was not run again
    children = [v for v in VariantTree.from_state(state["variants"]) if v.kind != "reference"]
    assert sorted(v.source for v in children) == sorted([HONEST, variant])
    assert context.evaluate.stats.judged == 2  # one verdict each, in one batch
    assert sorted(e["variant"] for e in results_log(context) if "final_of" not in e) == sorted(v.id for v in children)


def _batch_of_two(settings, tmp_path):
    """A run whose one batch is two different candidates coded in parallel, and its scripted agents."""
    settings.search.batch_size = 2
    variant = HONEST.replace("torch.clamp(x, min=0.0) * self.scale", "torch.relu(x) * self.scale")
    agents = scripted_agents(planner=[plan_reply("fuse", "relu")], coder=[code_reply(HONEST), code_reply(variant)],
                             critic=[review_reply(), review_reply()])
    return make_context(settings, tmp_path, agents, max_iters=2), agents


def test_a_run_killed_while_judging_resumes_with_its_candidates_written(settings, tmp_path):
    context, agents = _batch_of_two(settings, tmp_path)
    judge_many = context.evaluate.judge_many
    batches = []

    def dies_once(problem, sources, on_verdict=None, until=None):
        batches.append(list(sources))
        if len(batches) == 1:
            raise Killed("the run died while judging")
        return judge_many(problem, sources, on_verdict=on_verdict, until=until)

    context.evaluate.judge_many = dies_once
    graph = builder().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": context.budgets.recursion_limit}
    with pytest.raises(Killed):
        graph.invoke({"run_id": "run-test"}, config, context=context, durability="sync")
    graph.invoke(None, config, context=context, durability="sync")
    state = state_of(graph, config)
    assert state["iteration"] == 2 and len(agents["coder"].requests) == 2  # nothing written twice
    assert len(batches) == 2 and sorted(batches[0]) == sorted(batches[1])  # the batch, judged whole, once
    assert context.evaluate.stats.judged == 2


def test_the_planner_sees_the_code_of_the_fastest_variants_and_mcts_runs_the_batch(settings, tmp_path):
    settings.search.batch_size = 2
    variant = HONEST.replace("torch.clamp(x, min=0.0) * self.scale", "torch.relu(x) * self.scale")
    agents = scripted_agents(planner=[plan_reply("fuse", "relu"), plan_reply("again", "more")],
                             coder=[code_reply(HONEST), code_reply(variant), code_reply(HONEST.replace(
                                 "* self.scale", "* self.scale + 0.0"))],
                             critic=[review_reply()] * 3)
    context = make_context(settings, tmp_path, agents, max_iters=3, policy="mcts")
    graph, config = run(context)
    state = state_of(graph, config)
    assert state["search_policy"] == "mcts" and state["iteration"] == 3
    assert any(e.startswith("select (mcts): ") for e in state["events"])
    second = agents["planner"].requests[1].text
    assert "## The code of the fastest variants" in second and "class ModelNew" in second


def test_a_run_killed_after_one_verdict_of_its_batch_judges_only_the_rest(settings, tmp_path):
    """Each verdict is on disk as soon as the judge has it: killed after the first of two, the resumed run judges
    the second alone."""
    context, agents = _batch_of_two(settings, tmp_path)
    judge_many = context.evaluate.judge_many
    batches = []

    def dies_after_one(problem, sources, on_verdict=None, until=None):
        batches.append(list(sources))
        if len(batches) == 1:
            [first] = judge_many(problem, sources[:1], on_verdict=on_verdict, until=until)
            raise Killed("the run died while judging the second")
        return judge_many(problem, sources, on_verdict=on_verdict, until=until)

    context.evaluate.judge_many = dies_after_one
    graph = builder().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": context.budgets.recursion_limit}
    with pytest.raises(Killed):
        graph.invoke({"run_id": "run-test"}, config, context=context, durability="sync")
    graph.invoke(None, config, context=context, durability="sync")
    state = state_of(graph, config)
    assert state["iteration"] == 2 and len(batches) == 2
    assert batches[1] == batches[0][1:]  # the first verdict was kept: only the second is judged again
    assert context.evaluate.stats.judged == 2
    events = " ".join(state["events"])
    assert "recovered from the run directory" in events



def test_the_planner_is_shown_the_recipes_and_one_it_picks_is_queued_as_written(settings, tmp_path):
    from types import SimpleNamespace

    from kernelpro.graphs.expand import plan
    from kernelpro.recipes.catalogue import recipes_for
    from tests.conftest import problem

    agents = scripted_agents(planner=[plan_reply("`inference_mode`", "fuse the two relus")])
    context = make_context(settings, tmp_path, agents)
    tree = VariantTree.with_root(context.problem.source)
    command = plan({"variants": tree.to_state(), "planning": [tree.root.id]}, SimpleNamespace(context=context))
    shown = agents["planner"].requests[0].text
    assert "## Built-in recipes for this variant" in shown and "- `inference_mode`: run the forward under" in shown
    picked, own = VariantTree.from_state({**tree.to_state(), **command.update["variants"]}).root.ideas
    recipe = next(r for r in recipes_for(problem("repeated_relu"), "cpu") if r.name == "inference_mode")
    assert (picked.origin, picked.source, picked.description) == ("recipe:inference_mode", recipe.source, recipe.idea)
    assert own.origin == "llm" and own.source is None  # the coder writes the planner's own idea
