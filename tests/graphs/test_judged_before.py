"""Verdicts taken before a run (a suite's compile baselines): the same code in the run is answered from them and
never judged again; a file that is not such verdicts is refused with its line; a verdict about a moment rather
than the code (a timeout) is not reused."""

from __future__ import annotations

import json

import pytest

from kernelpro.harness.judge import judge
from kernelpro.harness.result import EvalResult
from kernelpro.runs.judged_before import FILE_NAME, JudgedBefore, JudgedBeforeError, write_verdicts
from kernelpro.search.tree import VariantTree
from tests.conftest import problem
from tests.graphs.helpers import HONEST, code_reply, make_context, plan_reply, review_reply, run, scripted_agents


def test_code_judged_before_the_run_is_answered_from_that_verdict_and_leaves_the_budget_to_the_next(settings,
                                                                                                    tmp_path):
    earlier = judge(problem("repeated_relu"), HONEST, device="cpu", settings=settings)
    assert earlier.status == "ok"
    path = tmp_path / "baselines.jsonl"
    write_verdicts(path, [("the suite's compile_default baseline", HONEST, earlier)])
    other = HONEST.replace("torch.clamp(x, min=0.0) * self.scale", "torch.relu(x) * self.scale")
    agents = scripted_agents(planner=[plan_reply("fuse"), plan_reply("relu")], critic=[review_reply(), review_reply()],
                             coder=[code_reply("# written again\n" + HONEST),  # the same code, another layout
                                    code_reply(other)])
    context = make_context(settings, tmp_path, agents, max_iters=1)
    assert len(JudgedBefore.adopt(path, context.files.root)) == 1
    graph, config = run(context)
    state = graph.get_state(config).values
    reused, measured = sorted((v for v in VariantTree.from_state(state["variants"]) if v.kind != "reference"),
                              key=lambda v: v.iteration)
    answered = earlier.model_copy(deep=True)
    answered.details["answered_by"] = "the suite's compile_default baseline"  # counted once by whoever sums seconds
    assert reused.result == answered.model_dump(mode="json")
    assert any(e.startswith(f"judge {reused.id}:") and "(the same code as the suite's compile_default baseline: "
               "its verdict, not judged again)" in e for e in state["events"])
    # the answered one cost nothing, so --max-iters 1 still had one candidate to judge
    assert measured.source == other and measured.result["status"] == "ok"
    assert context.evaluate.stats.judged == 1
    assert (state["iteration"], state["answered_before"]) == (2, 1)
    assert state["stop_reason"] == "iteration budget reached (1 candidate judged)"
    assert any(e.startswith("finalists re-judged") for e in state["events"])  # the reused verdict is re-judged too
    assert (context.files.candidates / f"{reused.id}.py").exists()  # the logged candidate has its code on disk


def test_a_file_that_is_not_verdicts_is_refused_with_its_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    ok = EvalResult(status="ok", correct=True, speedup=1.2)
    path.write_text(json.dumps({"label": "x", "source": HONEST, "result": ok.model_dump(mode="json")}) + "\n\n"
                    + json.dumps({"source": HONEST}) + "\n")
    with pytest.raises(JudgedBeforeError, match=r"bad.jsonl, line 3: not a verdict with its source \(KeyError"):
        JudgedBefore.read(path)
    with pytest.raises(JudgedBeforeError, match="cannot be read"):
        JudgedBefore.read(tmp_path / "missing.jsonl")
    assert len(JudgedBefore.of_run(tmp_path)) == 0 and not (tmp_path / FILE_NAME).exists()


def test_a_verdict_about_a_moment_rather_than_the_code_is_not_reused(tmp_path):
    path = tmp_path / "verdicts.jsonl"
    timed_out = EvalResult(status="timeout", reason="wall_time", message="no result within 30 s")
    rejected = EvalResult(status="rejected", reason="try_except_fallback")
    write_verdicts(path, [("a", HONEST, timed_out), ("b", HONEST.replace("0.0", "0.5"), rejected)])
    found = JudgedBefore.read(path)
    assert found.find(HONEST) is None
    assert found.find(HONEST.replace("0.0", "0.5")) == (rejected, "b")


def test_without_a_model_a_recipe_answered_before_the_run_goes_first_and_costs_nothing(settings, tmp_path):
    """A suite's compile baseline is one of the recipes: the recipe policy takes it first, whatever its prior, so
    a run's best is never below a baseline it had in hand, and --max-iters is left to the recipes it judges."""
    from kernelpro.recipes.catalogue import recipes_for
    from kernelpro.suite.baselines import baseline_source

    compiled = baseline_source(problem("repeated_relu"), "compile_default")
    recipes = recipes_for(problem("repeated_relu"), "cpu")
    assert recipes[0].name != "compile_default"  # its own prior puts it behind others on the CPU
    earlier = EvalResult(status="ok", correct=True, speedup=0.5, speedup_ci95=[0.48, 0.52], speed_verdict="slower",
                         message="0.50x [0.48-0.52] slower")
    path = tmp_path / "baselines.jsonl"
    write_verdicts(path, [("the suite's compile_default baseline", compiled, earlier)])
    context = make_context(settings, tmp_path, None, max_iters=1)
    JudgedBefore.adopt(path, context.files.root)
    graph, config = run(context)
    state = graph.get_state(config).values
    first, second = sorted((v for v in VariantTree.from_state(state["variants"]) if v.kind != "reference"),
                           key=lambda v: v.iteration)
    assert first.origin == "recipe:compile_default" and first.result["speedup"] == 0.5
    assert second.origin == f"recipe:{recipes[0].name}" and second.result["status"] == "ok"
    assert context.evaluate.stats.judged == 1  # the answered one never reached the judge
    assert (state["iteration"], state["answered_before"]) == (2, 1)
