"""A resumed run judges nothing twice: the judge is seeded from what the run kept, so a candidate whose twin's
verdict was recovered from the run directory is answered from that verdict, not judged again."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from kernelpro.graphs.optimize import builder
from kernelpro.search.tree import VariantTree
from tests.graphs.helpers import HONEST, code_reply, make_context, plan_reply, review_reply, scripted_agents


class Killed(RuntimeError):
    """Stands for the process dying right after the judge's first verdict was kept."""


def test_a_twin_of_a_verdict_recovered_after_a_kill_is_answered_from_it(settings, tmp_path):
    settings.search.batch_size = 2
    restyled = "# written again\n" + HONEST  # the same code, another layout
    agents = scripted_agents(planner=[plan_reply("fuse", "again")], coder=[code_reply(HONEST), code_reply(restyled)],
                             critic=[review_reply(), review_reply()])
    context = make_context(settings, tmp_path, agents, max_iters=2)
    judge_many, batches = context.evaluate.judge_many, []

    def dies_after_its_verdicts(problem, sources, on_verdict=None, until=None):
        batches.append(list(sources))
        judge_many(problem, sources, on_verdict=on_verdict, until=until)
        raise Killed("the run died before the batch was recorded")

    context.evaluate.judge_many = dies_after_its_verdicts
    graph = builder().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": context.budgets.recursion_limit}
    with pytest.raises(Killed):
        graph.invoke({"run_id": "run-test"}, config, context=context, durability="sync")
    graph.invoke(None, config, context=context, durability="sync")
    state = graph.get_state(config).values
    assert len(batches) == 1 and len(batches[0]) == 1  # the two are one code: judged once, and not after the kill
    assert context.evaluate.stats.judged == 1
    first, twin = sorted((v for v in VariantTree.from_state(state["variants"]) if v.kind != "reference"),
                         key=lambda v: v.iteration)
    assert "answered_by" not in first.result["details"] and twin.result["details"]["answered_by"] == first.id
    events = " ".join(state["events"])
    assert f"judge {first.id}: " in events and "recovered from the run directory" in events
    assert f"the same candidate as {first.id}: its verdict, not judged again" in events
