"""The optimisation loop as a LangGraph state machine.

    baseline -> select -> plan -> review_plan -> code -> review_code -> judge -> profile -> interpret
                  ^                                                        |         |          |
                  |                                                        v         v          v
                  +------------------------------------------ remember <-------- critique <-----+
    select -> finish when a budget is spent or nothing is left to try

Every node returns a typed `Command`, so the routes are explicit and LangGraph Studio draws them. The review
nodes interrupt only in interactive runs; they are separate from plan and code because an interrupted node
reruns from its start when resumed, and the model calls before the question must not be paid twice. Without a
language model the same graph runs the built-in recipes: plan lists recipes, code takes the recipe's source,
interpret and critique are deterministic.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from kernelpro.agents.coder import CoderInput, write_candidate
from kernelpro.agents.critic import CriticInput, review
from kernelpro.agents.planner import PlannerInput, make_plan
from kernelpro.agents.profiler_interpreter import InterpreterInput, interpret
from kernelpro.agents.protocol import MalformedReply
from kernelpro.graphs.context import OptimizeContext
from kernelpro.graphs.state import Draft, OptimizeState
from kernelpro.graphs.views import (
    attempt_records,
    describe_result,
    leaderboard_text,
    measurement_text,
    recipe_lesson,
    stop_reason,
    variant_label,
    variant_summary,
)
from kernelpro.harness.result import EvalResult
from kernelpro.llm import BudgetExceeded
from kernelpro.search.kinds import detect_kind
from kernelpro.search.recipes import recipe_expansions
from kernelpro.search.tree import Variant, VariantTree, speedup_text

Ctx = Runtime[OptimizeContext]
ROOT = "ref"


def _tree(state: OptimizeState) -> VariantTree:
    return VariantTree.from_state(state.get("variants", {}))


def _usage(ctx: OptimizeContext) -> dict[str, Any]:
    return {"usage": ctx.meter.to_dict()} if ctx.meter is not None else {}


def node(fn: Callable[[OptimizeState, Ctx], Command]) -> Callable[[OptimizeState, Ctx], Command]:
    """Count the time spent in the node and turn a spent dollar budget into a clean stop."""

    @functools.wraps(fn)
    def timed(state: OptimizeState, runtime: Ctx) -> Command:
        start = time.monotonic()
        try:
            command = fn(state, runtime)
        except BudgetExceeded as spent:
            command = Command(goto="finish", update={"stop_reason": f"LLM budget spent: {spent}",
                                                     "status": "stopped", **_usage(runtime.context)})
        update = dict(command.update or {})
        update["elapsed_s"] = update.get("elapsed_s", 0.0) + time.monotonic() - start
        return Command(goto=command.goto, update=update)

    return timed


@node
def baseline(state: OptimizeState, runtime: Ctx) -> Command[Literal["select"]]:
    if state.get("variants"):  # resumed, or started from an earlier state
        return Command(goto="select")
    ctx = runtime.context
    root = Variant(id=ROOT, parent_id=None, depth=0, source=ctx.problem.source, kind="reference",
                   idea="the reference implementation", origin="reference", status="judged", speedup=1.0)
    events = [f"baseline: {ctx.problem.name} on {ctx.device} ({ctx.gpu}); policy "
              f"{'language model' if ctx.uses_llm else 'built-in recipes'}"]
    gpu_s = 0.0
    if ctx.profile is not None:
        report = ctx.profile(ctx.problem, None)
        if report is not None:
            root.diagnosis, root.findings, gpu_s = report.text, report.finding_ids, report.gpu_s
            events.append(f"reference profiled: {report.headline}")
    tree = VariantTree.from_state({})
    tree.add(root)
    return Command(goto="select", update={"variants": tree.to_state(), "iteration": 0, "status": "running",
                                          "policy": "llm" if ctx.uses_llm else "recipes", "gpu_s": gpu_s,
                                          "events": events, "exhausted": [], "ideas": {}})


@node
def select(state: OptimizeState, runtime: Ctx) -> Command[Literal["plan", "finish"]]:
    ctx = runtime.context
    stop = stop_reason(state, ctx)
    if stop:
        reason, status = stop
        return Command(goto="finish", update={"stop_reason": reason, "status": status})
    chosen = ctx.policy.select(_tree(state), exclude=set(state.get("exhausted", [])))
    if chosen is None:
        return Command(goto="finish", update={"stop_reason": "nothing left worth trying"})
    return Command(goto="plan", update={"selected": chosen, "draft": None})


@node
def plan(state: OptimizeState, runtime: Ctx) -> Command[Literal["code", "review_plan", "select"]]:
    ctx, tree, chosen = runtime.context, _tree(state), state["selected"]
    if state.get("ideas", {}).get(chosen):  # ideas already planned (and approved) for this variant
        return Command(goto="code")
    if ctx.uses_llm:
        ideas = _plan_with_llm(state, ctx, tree, chosen)
    else:
        ideas = [{"title": r.name, "description": r.idea, "origin": f"recipe:{r.name}", "source": r.source}
                 for r in recipe_expansions(tree, chosen, ctx.device, ctx.settings.harness.tolerances)]
    if not ideas:
        return Command(goto="select", update={"exhausted": [chosen],
                                              "events": [f"plan: nothing left to try from {chosen}"], **_usage(ctx)})
    titles = "; ".join(i["title"] for i in ideas)
    return Command(goto="review_plan", update={"ideas": {chosen: ideas}, **_usage(ctx),
                                               "events": [f"plan from {chosen}: {titles}"]})


def _plan_with_llm(state: OptimizeState, ctx: OptimizeContext, tree: VariantTree, chosen: str) -> list[dict]:
    variant = tree.get(chosen)
    lessons = ctx.memory.lessons(ctx.problem, variant.diagnosis or variant.idea) if ctx.memory else ""
    view = PlannerInput(problem_name=ctx.problem.name, problem_source=ctx.problem.source, device=ctx.device,
                        gpu=ctx.gpu, variant_label=variant_label(variant), variant_summary=variant_summary(variant),
                        diagnosis=variant.diagnosis or "not profiled", leaderboard=leaderboard_text(tree),
                        lessons=lessons or "none yet")
    try:
        answer = make_plan(ctx.model("planner"), view, tools=ctx.tools_for("planner"), mode=ctx.tool_mode)
    except MalformedReply:
        return []
    return [{"title": i.title, "description": i.render(), "origin": "llm", "techniques": i.techniques}
            for i in answer.output.ideas]


@node
def review_plan(state: OptimizeState, runtime: Ctx) -> Command[Literal["code", "select", "finish"]]:
    if not runtime.context.interactive:
        return Command(goto="code")
    chosen = state["selected"]
    ideas = state["ideas"][chosen]
    answer = interrupt({"kind": "plan", "variant": chosen,
                        "ideas": [{k: v for k, v in i.items() if k != "source"} for i in ideas]})
    action = (answer or {}).get("action", "approve")
    if action == "stop":
        return Command(goto="finish", update={"stop_reason": "stopped by the user at the plan", "status": "stopped"})
    if action == "skip":
        return Command(goto="select", update={"ideas": {chosen: []}, "exhausted": [chosen],
                                              "events": [f"plan from {chosen} skipped by the user"]})
    if action == "edit":
        edited = [dict(title=i.get("title", "user idea"), description=i.get("description", i.get("title", "")),
                       origin="user") for i in answer.get("ideas", [])]
        return Command(goto="code", update={"ideas": {chosen: edited or ideas},
                                            "events": [f"plan from {chosen} edited by the user"]})
    return Command(goto="code")


@node
def code(state: OptimizeState, runtime: Ctx) -> Command[Literal["review_code", "select"]]:
    ctx, tree, chosen = runtime.context, _tree(state), state["selected"]
    idea, *rest = state["ideas"][chosen]
    draft_id = f"v{len(tree)}"
    if "source" in idea:  # a recipe, or code the user supplied
        draft = Draft(id=draft_id, parent_id=chosen, idea=idea["description"], origin=idea["origin"],
                      source=idea["source"], notes="", fixes=[])
        return Command(goto="review_code", update={"ideas": {chosen: rest}, "draft": draft})
    if not ctx.uses_llm:  # an idea the user typed in a run without a model: nobody can write it
        return Command(goto="select", update={"ideas": {chosen: rest}, "events": [
            f"code: no language model to implement {idea['title']!r}; configure one to run your own ideas"]})
    parent = tree.get(chosen)
    view = CoderInput(problem_name=ctx.problem.name, problem_source=ctx.problem.source, device=ctx.device,
                      gpu=ctx.gpu, variant_label=variant_label(parent), parent_source=parent.source,
                      idea=idea["description"])
    try:
        outcome = write_candidate(ctx.model("coder"), view, ctx.checks or (lambda _: []),
                                  tools=ctx.tools_for("coder"), mode=ctx.tool_mode, max_attempts=ctx.coder_attempts)
    except MalformedReply as bad:
        failed = Variant(id=draft_id, parent_id=chosen, depth=parent.depth + 1, source="", kind="pytorch",
                         idea=idea["description"], origin="llm", status="failed",
                         diagnosis=f"the coder gave no usable candidate: {bad}")
        tree.add(failed)
        return Command(goto="select", update={"ideas": {chosen: rest}, "variants": tree.to_state(),
                                              "events": [f"code {draft_id}: no usable candidate"], **_usage(ctx)})
    notes = outcome.candidate.summary
    if outcome.problems:
        notes += " | still reported before judging: " + "; ".join(p.splitlines()[0] for p in outcome.problems)
    draft = Draft(id=draft_id, parent_id=chosen, idea=idea["description"], origin="llm",
                  source=outcome.candidate.code, notes=notes, fixes=[list(f) for f in outcome.compile_fixes])
    return Command(goto="review_code", update={
        "ideas": {chosen: rest}, "draft": draft, **_usage(ctx),
        "events": [f"code {draft_id}: {outcome.candidate.summary} ({outcome.attempts} attempt(s))"],
    })


@node
def review_code(state: OptimizeState, runtime: Ctx) -> Command[Literal["judge", "select", "finish"]]:
    if not runtime.context.interactive:
        return Command(goto="judge")
    draft = state["draft"]
    answer = interrupt({"kind": "code", "variant": draft["id"], "idea": draft["idea"], "source": draft["source"]})
    action = (answer or {}).get("action", "approve")
    if action == "stop":
        return Command(goto="finish", update={"stop_reason": "stopped by the user before judging",
                                              "status": "stopped"})
    if action == "skip":
        return Command(goto="select", update={"draft": None, "events": [f"{draft['id']} skipped by the user"]})
    if action == "edit" and answer.get("source"):
        edited = Draft(**{**draft, "source": answer["source"], "notes": "edited by the user"})
        return Command(goto="judge", update={"draft": edited, "events": [f"{draft['id']} edited by the user"]})
    return Command(goto="judge")


@node
def judge(state: OptimizeState, runtime: Ctx) -> Command[Literal["profile", "critique", "finish"]]:
    ctx, tree, draft = runtime.context, _tree(state), state["draft"]
    result = ctx.files.stored_result(draft["id"], draft["source"])
    recovered, twin = result is not None, None
    if result is None:
        ctx.files.write_source(draft["id"], draft["source"])
        twin = tree.equivalent_of(draft["source"], draft["origin"])
        # The same code (or the same recipes in another order) again: its verdict stands, at no GPU cost.
        result = EvalResult.model_validate(twin.result) if twin is not None else ctx.evaluate(ctx.problem,
                                                                                              draft["source"])
    parent = tree.get(draft["parent_id"])
    variant = Variant(id=draft["id"], parent_id=draft["parent_id"], depth=parent.depth + 1, source=draft["source"],
                      kind=detect_kind(draft["source"]), idea=draft["idea"], origin=draft["origin"],
                      status="judged" if result.status == "ok" else "failed",
                      result=result.model_dump(mode="json"),
                      speedup=result.speedup if result.status == "ok" and result.correct else None,
                      iteration=state.get("iteration", 0) + 1, compile_fixes=[tuple(f) for f in draft["fixes"]])
    if twin is not None:  # its profile too: profiling the same code again would only spend GPU time
        variant.diagnosis, variant.findings = twin.diagnosis, list(twin.findings)
    tree.add(variant)
    ctx.files.record_result(variant.id, result, {"iteration": variant.iteration, "parent": variant.parent_id,
                                                 "idea": variant.idea, "origin": variant.origin,
                                                 **result.to_json_dict()})
    gpu_s = (result.elapsed_s or 0.0) if ctx.device == "cuda" and not recovered and twin is None else 0.0
    event = f"judge {variant.id}: {describe_result(result)}" + (" (recovered from the run directory)"
                                                               if recovered else "")
    if twin is not None:
        event += f" (the same candidate as {twin.id}: its verdict, not judged again)"
    update = {"variants": tree.to_state(), "iteration": variant.iteration, "last": variant.id,
              "gpu_s": gpu_s, "events": [event], "draft": None}
    if result.reason == "reference_failed":
        return Command(goto="finish", update={**update, "status": "failed",
                                              "stop_reason": f"the reference itself fails: {result.message[:300]}"})
    if result.problem_findings:  # no candidate on this problem can be an improvement: say why and stop
        found = result.problem_findings[0]
        why = f"the problem is degenerate ({found.reason}): {found.message}"
        return Command(goto="finish", update={**update, "events": [event, f"{variant.id} does not count: {why}"],
                                              "stop_reason": why})
    nxt = "profile" if result.status == "ok" and ctx.profile is not None and twin is None else "critique"
    return Command(goto=nxt, update=update)


@node
def profile(state: OptimizeState, runtime: Ctx) -> Command[Literal["interpret", "critique"]]:
    ctx, tree = runtime.context, _tree(state)
    variant = tree.get(state["last"])
    report = ctx.profile(ctx.problem, variant.source) if ctx.profile else None
    if report is None:
        return Command(goto="critique", update={"events": [f"profile {variant.id}: no profile"]})
    variant.diagnosis, variant.findings = report.text, report.finding_ids
    update = {"variants": tree.to_state(), "gpu_s": report.gpu_s,
              "events": [f"profile {variant.id}: {report.headline}"]}
    return Command(goto="interpret" if ctx.uses_llm else "critique", update=update)


@node
def interpret_profile(state: OptimizeState, runtime: Ctx) -> Command[Literal["critique"]]:
    ctx, tree = runtime.context, _tree(state)
    variant = tree.get(state["last"])
    view = InterpreterInput(problem_name=ctx.problem.name, gpu=ctx.gpu, variant_label=variant_label(variant),
                            idea=variant.idea, measurement=measurement_text(variant), findings=variant.diagnosis)
    try:
        answer = interpret(ctx.model("profiler_interpreter"), view, tools=ctx.tools_for("profiler_interpreter"),
                           mode=ctx.tool_mode)
    except MalformedReply:
        return Command(goto="critique", update={"events": [f"interpret {variant.id}: no usable diagnosis"],
                                                **_usage(ctx)})
    variant.diagnosis = answer.output.render()
    return Command(goto="critique", update={"variants": tree.to_state(), **_usage(ctx),
                                            "events": [f"interpret {variant.id}: {answer.output.limiter}"]})


@node
def critique(state: OptimizeState, runtime: Ctx) -> Command[Literal["remember"]]:
    ctx, tree = runtime.context, _tree(state)
    variant = tree.get(state["last"])
    if not ctx.uses_llm:
        variant.lesson = recipe_lesson(variant, ctx.problem.name, ctx.gpu)
        return Command(goto="remember", update={"variants": tree.to_state()})
    view = CriticInput(problem_name=ctx.problem.name, problem_source=ctx.problem.source, device=ctx.device,
                       gpu=ctx.gpu, variant_label=variant_label(variant), idea=variant.idea,
                       candidate_source=variant.source, result=variant_summary(variant),
                       diagnosis=variant.diagnosis or "not profiled")
    try:
        answer = review(ctx.model("critic"), view, tools=ctx.tools_for("critic"), mode=ctx.tool_mode)
    except MalformedReply:
        variant.lesson = recipe_lesson(variant, ctx.problem.name, ctx.gpu)
        return Command(goto="remember", update={"variants": tree.to_state(), **_usage(ctx),
                                                "events": [f"critique {variant.id}: no usable review"]})
    verdict = answer.output
    variant.lesson, variant.techniques = verdict.lesson, verdict.techniques
    variant.review = verdict.model_dump()
    events = [f"critique {variant.id}: {verdict.verdict}" + (f" ({'; '.join(verdict.risks)})" if verdict.risks
                                                                else "")]
    if verdict.verdict != "credible" and variant.speedup is not None:
        variant.flagged = True  # kept in the tree and the report, never chosen as the best
        events.append(f"{variant.id} is flagged by the critic and will not count as the best")
    return Command(goto="remember", update={"variants": tree.to_state(), "events": events,
                                            **_usage(ctx)})


@node
def remember(state: OptimizeState, runtime: Ctx) -> Command[Literal["select"]]:
    ctx, tree = runtime.context, _tree(state)
    variant = tree.get(state["last"])
    events = []
    if ctx.memory is not None:
        try:
            ctx.memory.remember(attempt_records(variant, state["run_id"], ctx.problem, ctx.gpu))
        except Exception as error:  # noqa: BLE001 - memory is an aid; losing one lesson must not end the run
            events.append(f"remember {variant.id}: the search memory failed ({type(error).__name__}: {error})")
    ctx.policy.observe(tree, variant.id)
    return Command(goto="select", update={"variants": tree.to_state(), "events": events})


@node
def finish(state: OptimizeState, runtime: Ctx) -> Command[Literal["__end__"]]:
    ctx, tree = runtime.context, _tree(state)
    status = state.get("status", "running")
    if status == "running":
        status = "completed"
    update: dict[str, Any] = {}
    events: list[str] = []
    if status != "failed" and not any(v.final is not None for v in tree):
        events += _rejudge_finalists(ctx, tree, update)
    best = tree.best()
    degenerate = tree.problem_finding()
    if best is not None:
        outcome = f"best {best.id} at {speedup_text(best.deciding_speedup, best.speedup_ci95)}"
    elif degenerate is not None:
        outcome = (f"no improvement: keep the reference (the problem is degenerate, {degenerate['reason']}: "
                   f"{degenerate['message']})")
    elif tree.correct():
        outcome = "no improvement: keep the reference (no correct candidate is measurably faster)"
    else:
        outcome = "no improvement: keep the reference (no correct candidate)"
    events.append(f"finished ({status}): {state.get('stop_reason', '')}; {outcome}")
    return Command(goto=END, update={**update, "status": status, "events": events, **_usage(ctx)})


def _rejudge_finalists(ctx: OptimizeContext, tree: VariantTree, update: dict[str, Any]) -> list[str]:
    """Judge the top candidates again, head to head with the reference, and keep what that says on each."""
    finalists = tree.finalists(ctx.settings.search.finalists)
    if not finalists:
        return []
    stored = {v.id: ctx.files.stored_result(f"{v.id}.final", v.source) for v in finalists}
    todo = [v for v in finalists if stored[v.id] is None]
    for variant in todo:
        ctx.files.write_source(f"{variant.id}.final", variant.source)
    try:
        fresh = dict(zip([v.id for v in todo], ctx.evaluate.rejudge(ctx.problem, [v.source for v in todo]),
                         strict=True))
    except Exception as error:  # noqa: BLE001 - the run's verdicts stand; only the second look is lost
        return [f"finalists could not be re-judged ({type(error).__name__}: {error}); the first verdicts decide"]
    events = [f"finalists re-judged head to head with the reference: {', '.join(v.id for v in finalists)}"]
    for variant in finalists:
        result = stored[variant.id] or fresh[variant.id]
        variant.final = result.model_dump(mode="json")
        ctx.files.record_result(f"{variant.id}.final", result, {"final_of": variant.id, **result.to_json_dict()})
        events.append(f"final {variant.id}: {describe_result(result)} (first judged "
                      f"{speedup_text(variant.speedup, (variant.result or {}).get('speedup_ci95'))})")
    update["variants"] = tree.to_state()
    if ctx.device == "cuda":
        update["gpu_s"] = sum(r.elapsed_s or 0.0 for r in fresh.values())
    return events


def builder() -> StateGraph:
    graph = StateGraph(OptimizeState, context_schema=OptimizeContext)
    for name, fn in (("baseline", baseline), ("select", select), ("plan", plan), ("review_plan", review_plan),
                     ("code", code), ("review_code", review_code), ("judge", judge), ("profile", profile),
                     ("interpret", interpret_profile), ("critique", critique), ("remember", remember),
                     ("finish", finish)):
        graph.add_node(name, fn)
    graph.add_edge(START, "baseline")
    return graph


# Compiled without a checkpointer for LangGraph Studio (langgraph.json); the CLI compiles with SQLite.
graph = builder().compile()
