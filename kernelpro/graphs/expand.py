"""Plan and write a batch: ideas for the variants the policy asked about, one coder branch per expansion.

``plan`` runs the planner (or the recipes) for each variant in ``planning`` and queues its ideas on the variant
with their priors; ``code`` runs once per pending child, in parallel (LangGraph ``Send``), and returns only that
child. The review nodes interrupt only in interactive runs; they are separate from plan and code because an
interrupted node reruns from its start when resumed, and the model calls before the question must not be paid
twice.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from langgraph.types import Command, interrupt

from kernelpro.agents.coder import CoderInput, write_candidate
from kernelpro.agents.planner import PlannerInput, make_plan
from kernelpro.agents.protocol import MalformedReply
from kernelpro.graphs.context import OptimizeContext
from kernelpro.graphs.nodes import Ctx, changed, node, tree_of, usage
from kernelpro.graphs.state import OptimizeState
from kernelpro.graphs.views import (
    LEADERBOARD_HEADINGS,
    leaderboard_text,
    recipes_text,
    variant_label,
    variant_summary,
    variants_code,
)
from kernelpro.llm.models import BudgetExceeded
from kernelpro.recipes.catalogue import Recipe, recipe_expansions
from kernelpro.runs.judged_before import JudgedBefore, JudgedBeforeError
from kernelpro.search.priors import rank_priors
from kernelpro.search.tree import Idea, VariantTree

ANSWERED_FIRST = 1.0
"""Added to the prior of a recipe answered from an earlier verdict: above every recipe's own (at most 0.9)."""
NO_MODEL_TO_EDIT = ("no language model is configured, so nobody can write an idea of yours; configure one "
                    "(KERNELPRO_LLM__MODEL or --model) to edit plans, or edit a candidate's code instead")


@node
def plan(state: OptimizeState, runtime: Ctx) -> Command[Literal["review_plan"]]:
    ctx, tree = runtime.context, tree_of(state)
    events = []
    for parent_id in state.get("planning", []):
        ideas = _llm_ideas(ctx, tree, parent_id) if ctx.idea_source == "llm" else _recipe_ideas(ctx, tree, parent_id)
        fresh = tree.add_ideas(parent_id, ideas)
        titles = "; ".join(i.title for i in fresh)
        events.append(f"plan from {parent_id}: {titles}" if fresh else f"plan: nothing left to try from {parent_id}")
    return Command(goto="review_plan", update={"variants": changed(tree, state.get("planning", [])),
                                               "events": events, **usage(ctx)})


def _recipe_ideas(ctx: OptimizeContext, tree: VariantTree, parent_id: str) -> list[Idea]:
    found = recipe_expansions(tree, parent_id, ctx.device, ctx.settings.harness.tolerances)
    try:
        earlier = JudgedBefore.of_run(ctx.files.root)
    except JudgedBeforeError:  # the judge node says why; here the recipes keep their own order
        earlier = JudgedBefore()
    # A recipe whose very code was judged before the run (a suite's compile baseline) is answered at no cost and
    # tells whether the reference is host-bound, which reorders the rest: it goes first, whatever its prior.
    base = [r.prior + (ANSWERED_FIRST if earlier.find(r.source) is not None else 0.0) for r in found]
    order = sorted(range(len(found)), key=lambda i: -base[i])
    return rank_priors([_recipe_idea(found[i]) for i in order], base=[base[i] for i in order])


def _recipe_idea(recipe: Recipe, techniques: list[str] | None = None,
                 expected_speedup: float | None = None) -> Idea:
    return Idea(title=recipe.name, description=recipe.idea, origin=recipe.origin, source=recipe.source,
                techniques=techniques or [], expected_speedup=expected_speedup)


def _technique_scores(ctx: OptimizeContext) -> dict[str, float]:
    if ctx.memory is None:
        return {}
    try:
        return ctx.memory.technique_scores(ctx.problem)
    except Exception:  # noqa: BLE001 - the memory is an aid: without it the priors rest on the plan alone
        return {}


def _llm_ideas(ctx: OptimizeContext, tree: VariantTree, parent_id: str) -> list[Idea]:
    variant = tree.get(parent_id)
    profile = variant.profile_notes or variant.no_profile or "not profiled"
    lessons = ctx.memory.lessons(ctx.problem, variant.profile_notes or variant.idea) if ctx.memory else ""
    recipes = {r.name: r for r in recipe_expansions(tree, parent_id, ctx.device, ctx.settings.harness.tolerances)}
    view = PlannerInput(problem_name=ctx.problem.name, problem_source=ctx.problem.source, device=ctx.device,
                        gpu=ctx.gpu, variant_label=variant_label(variant), variant_summary=variant_summary(variant),
                        profile=profile, leaderboard=leaderboard_text(tree),
                        **({"leaderboard_heading": LEADERBOARD_HEADINGS[tree.objective]}
                           if tree.objective in LEADERBOARD_HEADINGS else {}),
                        variants_code=variants_code(tree, ctx.settings.search.planner_code_tokens),
                        recipes=recipes_text(list(recipes.values())),
                        lessons=lessons or "none yet", max_ideas=ctx.settings.search.ideas_per_plan)
    try:
        answer = make_plan(ctx.model("planner"), view, tools=ctx.tools_for("planner"), mode=ctx.tool_mode)
    except MalformedReply:
        return []
    ideas = []
    for i in answer.output.ideas:  # a recipe picked by its name is judged as the recipe wrote it, no coder needed
        recipe = recipes.get(i.title.strip().strip("`"))
        ideas.append(_recipe_idea(recipe, i.techniques, i.expected_speedup) if recipe is not None else
                     Idea(title=i.title, description=i.render(), origin="llm", techniques=i.techniques,
                          expected_speedup=i.expected_speedup))
    return rank_priors(ideas, _technique_scores(ctx))


@node
def review_plan(state: OptimizeState, runtime: Ctx) -> Command[Literal["select", "finish"]]:
    if not runtime.context.interactive:
        return Command(goto="select", update={"planning": []})
    ctx, tree, events = runtime.context, tree_of(state), []
    for parent_id in state.get("planning", []):
        ideas = tree.get(parent_id).ideas
        if not ideas:
            continue
        question = {"kind": "plan", "variant": parent_id, "editable": ctx.uses_llm,
                    "ideas": [{"title": i.title, "description": i.description} for i in ideas]}
        if not ctx.uses_llm:
            question["not_editable"] = NO_MODEL_TO_EDIT
        answer = interrupt(question)
        while (answer or {}).get("action") == "edit" and not ctx.uses_llm:  # refused: ask again, saying why
            answer = interrupt({**question, "notice": f"edit refused: {NO_MODEL_TO_EDIT}"})
        action = (answer or {}).get("action", "approve")
        if action == "stop":  # the plans answered before it stand
            return Command(goto="finish", update={"variants": changed(tree, state.get("planning", [])),
                                                  "events": events, "stop_reason": "stopped by the user at the plan",
                                                  "status": "stopped", "planning": []})
        if action == "skip":
            tree.get(parent_id).ideas, tree.get(parent_id).exhausted = [], True
            events.append(f"plan from {parent_id} skipped by the user")
        elif action == "edit":
            edited = [Idea(title=i.get("title", "user idea"), description=i.get("description", i.get("title", "")),
                           origin="user") for i in answer.get("ideas", [])]
            tree.get(parent_id).ideas = rank_priors(edited) or ideas
            events.append(f"plan from {parent_id} edited by the user")
    return Command(goto="select", update={"variants": changed(tree, state.get("planning", [])), "planning": [],
                                          "events": events})


def code(state: dict[str, Any], runtime: Ctx) -> dict[str, Any]:
    """One branch of the batch: the coder writes the child ``state["variant_id"]`` from its parent.

    Receives only its child and the parent (``Send``), returns only the child."""
    start = time.monotonic()
    ctx, tree = runtime.context, VariantTree.from_state(state["variants"])
    child = tree.get(state["variant_id"])
    events: list[str] = []
    if child.source:  # a recipe, or code the user supplied
        return {"elapsed_s": time.monotonic() - start}
    if not ctx.uses_llm:  # an idea the user typed in a run without a model: nobody can write it
        tree.mark_failed(child.id, "no language model to write it")
        events.append(f"code: no language model to implement {child.idea!r}; configure one to run your own ideas")
    else:
        parent = tree.get(child.parent_id or "")
        view = CoderInput(problem_name=ctx.problem.name, problem_source=ctx.problem.source, device=ctx.device,
                          gpu=ctx.gpu, variant_label=variant_label(parent), parent_source=parent.source,
                          idea=child.idea)
        try:
            outcome = write_candidate(ctx.model("coder"), view, ctx.checks or (lambda _: []),
                                      tools=ctx.tools_for("coder"), mode=ctx.tool_mode,
                                      max_attempts=ctx.coder_attempts)
        except (MalformedReply, BudgetExceeded) as bad:
            tree.mark_failed(child.id, f"the coder gave no usable candidate: {bad}")
            events.append(f"code {child.id}: no usable candidate")
        else:
            tree.write_code(child.id, outcome.candidate.code, outcome.compile_fixes)
            still = (" | still reported before judging: " + "; ".join(p.splitlines()[0] for p in outcome.problems)
                     if outcome.problems else "")
            events.append(f"code {child.id}: {outcome.candidate.summary} ({outcome.attempts} attempt(s)){still}")
    return {"variants": changed(tree, [child.id]), "events": events, "elapsed_s": time.monotonic() - start,
            **usage(ctx)}


@node
def review_code(state: OptimizeState, runtime: Ctx) -> Command[Literal["gate", "finish"]]:
    if not runtime.context.interactive:
        return Command(goto="gate")
    tree, events, pending = tree_of(state), [], state.get("pending", [])
    # Answered before a stop: a run that goes on asks only about the rest (a skip is settled, an edit is the code).
    reviewed = [i for i in state.get("reviewed", []) if i in pending]
    for variant_id in pending:
        variant = tree.get(variant_id)
        if variant.settled or not variant.source or variant_id in reviewed:
            continue
        answer = interrupt({"kind": "code", "variant": variant.id, "idea": variant.idea, "source": variant.source})
        action = (answer or {}).get("action", "approve")
        if action == "stop":  # the answers before it stand: kept with the stop
            return Command(goto="finish", update={"variants": changed(tree, pending), "events": events,
                                                  "reviewed": reviewed, "status": "stopped",
                                                  "stop_reason": "stopped by the user before judging"})
        if action == "skip":
            tree.mark_failed(variant.id, "skipped by the user")
            events.append(f"{variant.id} skipped by the user")
            continue
        if action == "edit" and answer.get("source"):
            was = variant.origin
            tree.write_code(variant.id, answer["source"])
            # The verdict is the user's code's, not the recipe's or the coder's: remembered and reported as such.
            variant.origin, variant.idea = "user", f"the user's edit of a {was} candidate: {variant.idea}"
            events.append(f"{variant.id} edited by the user (was {was})")
        reviewed.append(variant.id)
    return Command(goto="gate", update={"variants": changed(tree, pending), "events": events,
                                        "reviewed": reviewed})
