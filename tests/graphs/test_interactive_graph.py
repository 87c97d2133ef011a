"""Interactive runs: the user's edits are the user's, and a run stopped at a prompt goes on when resumed."""

from __future__ import annotations

import json

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from kernelpro.graphs.resume import CUT_SHORT, go_on
from kernelpro.graphs.views import attempt_records
from kernelpro.memory.records import Attempt, ProblemSignature
from kernelpro.search.tree import VariantTree
from tests.conftest import problem
from tests.graphs.helpers import HONEST, make_context, results_log, run

SCALED = HONEST.replace("torch.clamp(x, min=0.0) * self.scale", "torch.relu(x) * self.scale")


def tree_of(graph, config) -> VariantTree:
    return VariantTree.from_state(graph.get_state(config).values["variants"])


def test_an_edited_recipe_candidate_is_the_users_in_the_tree_the_log_and_the_memory(settings, tmp_path):
    settings.search.finalists = 0  # the first verdict is all this test reads
    context = make_context(settings, tmp_path, None, max_iters=1, interactive=True, problem_name="scale_relu")
    saver = InMemorySaver()
    graph, config = run(context, saver=saver)  # the plan: the recipes
    graph, config = run(context, Command(resume={"action": "approve"}), saver=saver)
    (asked,) = graph.get_state(config).interrupts
    assert asked.value["kind"] == "code"
    recipe = tree_of(graph, config).get(asked.value["variant"])
    assert recipe.origin.startswith("recipe:")
    graph, config = run(context, Command(resume={"action": "edit", "source": SCALED}), saver=saver)
    edited = tree_of(graph, config).get(recipe.id)
    assert edited.origin == "user" and edited.source == SCALED and edited.result is not None
    assert edited.idea.startswith(f"the user's edit of a {recipe.origin} candidate")
    assert "[user] the user's edit" in tree_of(graph, config).render_ascii()  # the report's tree
    (logged,) = [e for e in results_log(context) if "final_of" not in e]
    assert logged["variant"] == edited.id and logged["origin"] == "user"
    attempt = attempt_records(edited, "run-test", context.problem, "CPU test")[0]
    assert attempt.origin == "user" and "Written by the user." in attempt.document()
    assert attempt.metadata()["origin"] == "user"


def test_attempts_written_before_they_had_an_origin_keep_their_ids():
    fields = {"run_id": "r", "problem": ProblemSignature.from_problem(problem("scale_relu")), "gpu": "g",
              "idea": "fuse", "outcome": "ok", "speedup": 1.2}
    old = Attempt(**fields)
    content = old.model_dump(mode="json", exclude={"created_at"})
    del content["origin"]  # the content hashed before the field existed
    import hashlib

    digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:24]
    assert old.id == f"attempt-{digest}" and Attempt(**fields, origin="user").id != old.id


def test_a_run_stopped_at_a_prompt_goes_on_at_the_candidate_the_stop_left(settings, tmp_path):
    context = make_context(settings, tmp_path, None, max_iters=1, interactive=True, problem_name="scale_relu")
    saver = InMemorySaver()
    graph, config = run(context, saver=saver)
    graph, config = run(context, Command(resume={"action": "approve"}), saver=saver)  # the plan
    (asked,) = graph.get_state(config).interrupts
    graph, config = run(context, Command(resume={"action": "stop"}), saver=saver)  # at the candidate
    state = graph.get_state(config)
    assert state.values["status"] == "stopped" and not state.next  # ended
    assert tree_of(graph, config).get(asked.value["variant"]).failure == CUT_SHORT
    go_on(graph, config, "the user stopped it")
    assert graph.get_state(config).next == ("review_code",)
    graph.invoke(None, config, context=context)
    (again,) = graph.get_state(config).interrupts  # back in the loop, at the candidate the stop left unjudged
    assert again.value["kind"] == "code" and again.value["variant"] == asked.value["variant"]
    assert graph.get_state(config).values["status"] == "running"
    assert any(e.startswith("resumed: the user stopped it; 1 candidate(s)") for e in graph.get_state(config)
               .values["events"])


def test_answers_given_before_a_stop_are_kept_and_not_asked_again(settings, tmp_path):
    """Approve, edit, skip, then stop: the edit is the candidate's code, the skip stands, and the run that goes on
    asks only about the candidate the stop was asked on (and those after it)."""
    context = make_context(settings, tmp_path, None, max_iters=4, interactive=True, problem_name="scale_relu")
    saver = InMemorySaver()
    graph, config = run(context, saver=saver)
    graph, config = run(context, Command(resume={"action": "approve"}), saver=saver)  # the plan
    asked = []
    for answer in ({"action": "edit", "source": SCALED}, {"action": "approve"}, {"action": "skip"},
                   {"action": "stop"}):
        (question,) = graph.get_state(config).interrupts
        asked.append(question.value["variant"])
        graph, config = run(context, Command(resume=answer), saver=saver)
    edited, approved, skipped, stopped_at = asked
    tree = tree_of(graph, config)
    assert tree.get(edited).source == SCALED and tree.get(edited).origin == "user"
    assert tree.get(skipped).failure == "skipped by the user"
    assert graph.get_state(config).values["reviewed"] == [edited, approved]
    assert any(e.startswith(f"{edited} edited by the user") for e in graph.get_state(config).values["events"])

    go_on(graph, config, "the user stopped it")
    graph.invoke(None, config, context=context)
    (again,) = graph.get_state(config).interrupts
    assert again.value["variant"] == stopped_at  # the first three are not asked again
    assert not results_log(context)  # nothing was judged before the stop
