"""Learn from a batch: the interpreter reads each profile, the critic reviews each verdict, the memory and the
policy take what the batch taught."""

from __future__ import annotations

from typing import Literal

from langgraph.types import Command

from kernelpro.agents.critic import CriticInput, review
from kernelpro.agents.profiler_interpreter import InterpreterInput, interpret
from kernelpro.agents.protocol import MalformedReply
from kernelpro.graphs.nodes import Ctx, changed, node, tree_of, usage
from kernelpro.graphs.state import OptimizeState
from kernelpro.graphs.views import attempt_records, measurement_text, recipe_lesson, variant_label, variant_summary


@node
def interpret_profile(state: OptimizeState, runtime: Ctx) -> Command[Literal["critique"]]:
    ctx, tree = runtime.context, tree_of(state)
    events = []
    for variant in (tree.get(i) for i in state.get("judged", [])):
        if not variant.findings or variant.speedup is None:
            continue
        view = InterpreterInput(problem_name=ctx.problem.name, gpu=ctx.gpu, variant_label=variant_label(variant),
                                idea=variant.idea, measurement=measurement_text(variant),
                                findings=variant.profile_notes)
        try:
            answer = interpret(ctx.model("profiler_interpreter"), view, tools=ctx.tools_for("profiler_interpreter"),
                               mode=ctx.tool_mode)
        except MalformedReply:
            events.append(f"interpret {variant.id}: no usable reading of the profile")
            continue
        variant.profile_notes = answer.output.render()
        events.append(f"interpret {variant.id}: {answer.output.limiter}")
    return Command(goto="critique", update={"variants": changed(tree, state.get("judged", [])), "events": events,
                                            **usage(ctx)})


@node
def critique(state: OptimizeState, runtime: Ctx) -> Command[Literal["observe"]]:
    ctx, tree = runtime.context, tree_of(state)
    events = []
    for variant in (tree.get(i) for i in state.get("judged", [])):
        if not ctx.uses_llm:
            variant.lesson = recipe_lesson(variant, ctx.problem.name, ctx.gpu)
            continue
        view = CriticInput(problem_name=ctx.problem.name, problem_source=ctx.problem.source, device=ctx.device,
                           gpu=ctx.gpu, variant_label=variant_label(variant), idea=variant.idea,
                           candidate_source=variant.source, result=variant_summary(variant),
                           profile=variant.profile_notes or variant.no_profile or "not profiled")
        try:
            answer = review(ctx.model("critic"), view, tools=ctx.tools_for("critic"), mode=ctx.tool_mode)
        except MalformedReply:
            variant.lesson = recipe_lesson(variant, ctx.problem.name, ctx.gpu)
            events.append(f"critique {variant.id}: no usable review")
            continue
        verdict = answer.output
        variant.lesson, variant.techniques = verdict.lesson, verdict.techniques or variant.techniques
        variant.review = verdict.model_dump()
        events.append(f"critique {variant.id}: {verdict.verdict}" + (f" ({'; '.join(verdict.risks)})"
                                                                     if verdict.risks else ""))
        if verdict.verdict != "credible" and variant.speedup is not None:
            variant.flagged = True  # kept in the tree and the report, never chosen as the best
            events.append(f"{variant.id} is flagged by the critic and will not count as the best")
    return Command(goto="observe", update={"variants": changed(tree, state.get("judged", [])), "events": events,
                                           **usage(ctx)})


@node
def observe(state: OptimizeState, runtime: Ctx) -> Command[Literal["select"]]:
    ctx, tree = runtime.context, tree_of(state)
    judged = state.get("judged", [])
    events = []
    if ctx.memory is not None:
        for variant in (tree.get(i) for i in judged):
            try:
                ctx.memory.remember(attempt_records(variant, state["run_id"], ctx.problem, ctx.gpu))
            except Exception as error:  # noqa: BLE001 - memory is an aid; losing one lesson must not end the run
                events.append(f"remember {variant.id}: the search memory failed ({type(error).__name__}: {error})")
    ctx.policy.observe(tree, list(judged))
    return Command(goto="select", update={"variants": tree.to_state(), "events": events, "judged": []})
