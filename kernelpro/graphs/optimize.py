"""The optimisation loop as a LangGraph state machine, in batches.

    baseline -> select -> plan -> review_plan -> select            (the policy asked for ideas first)
                select -> code x N (Send: one coder branch per expansion, in parallel) -> review_code -> gate
                       -> judge (the batch at once: Evaluator.judge_many) -> profile -> interpret -> critique
                       -> observe -> select
                select -> finish when a budget is spent or nothing is left to try

The search policy proposes each batch (``SearchPolicy.propose``); its children enter the tree as pending
variants (``VariantTree.spawn_from``) and get their code and verdicts through the tree's API. Every node returns
a typed ``Command`` with only what it changed, so the routes are explicit and LangGraph Studio draws them.
Without a language model the same graph runs the built-in recipes: plan lists recipes, code keeps the recipe's
source, interpret is skipped and critique is deterministic.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send

from kernelpro.graphs.context import OptimizeContext
from kernelpro.graphs.expand import code, plan, review_code, review_plan
from kernelpro.graphs.finalists import rejudge_finalists
from kernelpro.graphs.learn import critique, interpret_profile, observe
from kernelpro.graphs.measure import gate, judge, profile
from kernelpro.graphs.nodes import Ctx, changed, node, tree_of, usage
from kernelpro.graphs.resume import CUT_SHORT
from kernelpro.graphs.second_opinions import second_opinions, untrusted_reason
from kernelpro.graphs.state import OptimizeState
from kernelpro.graphs.time_budget import run_time_budget
from kernelpro.graphs.views import best_under_objective, judged_count, stop_reason
from kernelpro.search.tree import VariantTree, speedup_text


@node
def baseline(state: OptimizeState, runtime: Ctx) -> Command[Literal["select"]]:
    if state.get("variants"):  # resumed, or started from an earlier state
        return Command(goto="select")
    ctx = runtime.context
    tree = VariantTree.with_root(ctx.problem.source)
    root = tree.root
    objective = ctx.settings.search.objective
    events = [f"baseline: {ctx.problem.name} on {ctx.device} ({ctx.gpu}); search policy {ctx.policy.name}, ideas "
              f"from {'the language model' if ctx.idea_source == 'llm' else 'the built-in recipes'}"
              + (f"; objective {objective}" if objective != "time" else "")]
    if ctx.uses_llm and ctx.tool_calling:
        events.append(f"tool calling: {ctx.tool_calling}")
    gpu_s = 0.0
    report = ctx.profile(ctx.problem, None) if ctx.profile is not None else None
    if report is not None and not report.missing:
        root.profile_notes, root.findings, gpu_s = report.text, report.finding_ids, report.gpu_s
        events.append(f"reference profiled: {report.headline}")
    else:
        root.no_profile = (report.missing if report is not None else "") or ctx.no_profile_reason or \
            "the profiler could not measure the reference"
    return Command(goto="select", update={"variants": tree.to_state(), "iteration": 0, "status": "running",
                                          "idea_source": ctx.idea_source, "search_policy": ctx.policy.name,
                                          "objective": objective, "scorecard": ctx.settings.search.scorecard,
                                          "min_effect": ctx.settings.harness.min_effect,
                                          "gpu_s": gpu_s, "events": events, "pending": [], "planning": []})


@node
def select(state: OptimizeState, runtime: Ctx) -> Command[Literal["plan", "code", "finish"]]:
    ctx = runtime.context
    stop = stop_reason(state, ctx)
    if stop:
        reason, status = stop
        return Command(goto="finish", update={"stop_reason": reason, "status": status})
    tree = tree_of(state)
    room = min(ctx.settings.search.batch_size, ctx.budgets.max_iters - judged_count(state))
    if (budget := run_time_budget(state, ctx, tree)) is not None:
        fits = budget.batch(room, len(tree.finalists(ctx.settings.search.finalists)), budget.costs.measured)
        if fits == 0:
            return Command(goto="finish", update={"stop_reason": budget.not_started("the next candidate"),
                                                  "status": "stopped"})
        room = fits
    proposed = ctx.policy.propose(tree, room)
    if not proposed:
        return Command(goto="finish", update={"stop_reason": "nothing left worth trying"})
    if proposed[0].idea is None:
        return Command(goto="plan", update={"planning": [e.parent_id for e in proposed]})
    iteration = state.get("iteration", 0)
    children = []
    # With a forecast gate, the coder writes several candidates per expansion and the gate picks which to measure;
    # a recipe's code is fixed, so it is written once.
    copies = ctx.settings.forecast.proposals_per_expansion if ctx.gate.name != "measure_all" else 1
    for e in proposed:
        if e.idea is None:
            continue
        children.append(tree.spawn_from(e.parent_id, e.idea, iteration=iteration + 1))
        for _ in range(copies - 1 if not e.idea.source else 0):
            children.append(tree.spawn(e.parent_id, "", e.idea.description, e.idea.origin, iteration + 1,
                                       prior=e.idea.prior, techniques=e.idea.techniques,
                                       expected_speedup=e.idea.expected_speedup))
    ids = [c.id for c in children]
    parents = [c.parent_id or "" for c in children]
    sends = [Send("code", {"variant_id": c.id, "variants": changed(tree, [c.parent_id or "", c.id])})
             for c in children]
    event = f"select ({ctx.policy.name}): " + "; ".join(f"{c.parent_id} -> {c.id} (prior {c.prior:.2f})"
                                                        for c in children)
    return Command(goto=sends, update={"variants": changed(tree, [*parents, *ids]), "pending": ids,
                                       "judged": [], "events": [event]})


@node
def finish(state: OptimizeState, runtime: Ctx) -> Command[Literal["__end__"]]:
    ctx, tree = runtime.context, tree_of(state)
    status = state.get("status", "running")
    if status == "running":
        status = "completed"
    update: dict[str, Any] = {}
    events: list[str] = []
    for variant in tree.pending():  # a batch cut short (a budget, the user): nothing is left half-way
        tree.mark_failed(variant.id, CUT_SHORT)
        update.setdefault("variants", {}).update(changed(tree, [variant.id]))
    if status != "failed" and not any(v.final is not None for v in tree):
        finals: dict[str, Any] = {}
        events += rejudge_finalists(ctx, tree, finals, run_time_budget(state, ctx, tree))
        update["variants"] = {**update.get("variants", {}), **finals.get("variants", {})}
        if "gpu_s" in finals:
            update["gpu_s"] = finals["gpu_s"]
    if status != "failed":
        checked: dict[str, Any] = {}
        events += second_opinions(ctx, tree, checked, run_time_budget(state, ctx, tree))
        update["variants"] = {**update.get("variants", {}), **checked.get("variants", {})}
        if "gpu_s" in checked:
            update["gpu_s"] = update.get("gpu_s", 0.0) + checked["gpu_s"]
    best = tree.best()
    degenerate = tree.problem_finding()
    if best is not None:
        outcome = f"best {best.id} at {speedup_text(best.deciding_speedup, best.speedup_ci95)}"
        if tree.objective != "time":
            outcome = f"best {best.id} at {best_under_objective(best, tree.objective)}"
    elif state.get("reference_error"):
        outcome = "the reference fails, so no candidate can be judged against it: fix the problem file"
    elif not state.get("iteration"):  # no verdict at all: nothing says to keep the reference yet
        outcome = (f"nothing judged yet; kernelpro optimize --resume {ctx.files.root.name} goes on"
                   if status == "stopped" else "nothing judged: no candidate reached the judge")
    elif state.get("too_big"):
        outcome = "too big for this machine: no candidate can be judged within its memory"
    elif degenerate is not None:
        outcome = (f"no improvement: keep the reference (the problem is degenerate, {degenerate['reason']}: "
                   f"{degenerate['message']})")
    elif tree.correct():
        outcome = f"no improvement: keep the reference ({unimproved_reason(tree)})"
    else:
        outcome = "no improvement: keep the reference (no correct candidate)"
    events.append(f"run {status}: {state.get('stop_reason', '')}; {outcome}")
    return Command(goto=END, update={**update, "status": status, "events": events, **usage(ctx)})


def unimproved_reason(tree: VariantTree) -> str:
    """Why no correct candidate is the best, in words: a busy machine named where it is the reason (a candidate
    whose deciding verdict measured it better, timed while other programs competed for the CPU, cannot count)."""
    better = "faster" if tree.objective == "time" else f"lower in {tree.objective}"
    correct = tree.correct()
    busy = [v for v in correct if (r := v.deciding_result) is not None and r.contended]
    hollow = [v for v in busy if v.deciding_result.speed_verdict == "faster"] if tree.objective == "time" else []
    if hollow:
        named = ", ".join(f"{v.id} at {speedup_text(v.deciding_speedup, v.speedup_ci95)}" for v in hollow[:3])
        return (f"{named} measured {better}, but timed on a busy machine (other programs competed for the CPU), so "
                "it does not count: run again on a quiet machine")
    if tree.objective == "time" and (untrusted := untrusted_reason(tree)) is not None:
        return untrusted
    if busy and len(busy) == len(correct):
        return (f"no correct candidate is measurably {better}; every one was timed on a busy machine (other "
                "programs competed for the CPU): run again on a quiet machine")
    return f"no correct candidate is measurably {better}"


NODES = (("baseline", baseline), ("select", select), ("plan", plan), ("review_plan", review_plan), ("code", code),
         ("review_code", review_code), ("gate", gate), ("judge", judge), ("profile", profile),
         ("interpret", interpret_profile), ("critique", critique), ("observe", observe), ("finish", finish))
"""Every node by name; ``graphs.studio`` builds LangGraph Studio's graph from the same ones."""


def builder() -> StateGraph:
    """The optimisation graph; the CLI compiles it with its SQLite checkpointer and runs it with the context
    ``kernelpro.app.compose.build_context`` builds (Studio's graph is
    ``kernelpro.app.studio.optimize_studio_graph``)."""
    graph = StateGraph(OptimizeState, context_schema=OptimizeContext)
    for name, fn in NODES:
        graph.add_node(name, fn)
    graph.add_edge(START, "baseline")
    graph.add_edge("code", "review_code")
    return graph
