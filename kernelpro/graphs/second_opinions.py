"""A second opinion on the best before a run reports it: the best timed again, with the reference, in a fresh
process by an independent plain method (``Evaluator.second_opinion``), after the finalists' re-judgment.

A best whose second opinion disagrees beyond the noise (or that fails where it is timed again) gets the
``timing_disagreement`` finding on its deciding verdict and no longer counts; the next fastest contender is then
asked about in turn. A best below the memory floor counts only once a second opinion agrees. Only the run's
time objective asks: under energy or EDP the best is not chosen by its speed.
"""

from __future__ import annotations

from typing import Any

from kernelpro.graphs.context import OptimizeContext
from kernelpro.graphs.time_budget import TimeBudget
from kernelpro.harness.result import TIMING_DISAGREEMENT, EvalResult
from kernelpro.harness.timing.second_opinion_stats import opinion_text, settle
from kernelpro.search.tree import Variant, VariantTree, speedup_text


def disputed(result: EvalResult | None) -> bool:
    """A verdict a second opinion disagreed with: it needs a re-judgment of its own to settle it."""
    return result is not None and any(g.reason == TIMING_DISAGREEMENT for g in result.guards)


def contender(tree: VariantTree) -> Variant | None:
    """The fastest variant that would be the best by the judge's timing alone: its verdict not disputed, and
    either not asked about yet or counting after it was (one below the memory floor whose opinion could not be
    had does not). Among the re-judged finalists once there are any, as ``best()``."""
    if tree.problem_finding() is not None:
        return None
    finals = [v for v in tree if v.final is not None]
    card, effect = tree.scorecard, tree.min_effect
    found = [v for v in (finals or list(tree)) if v.kind != "reference" and v.correct and not v.flagged
             and (r := v.deciding_result) is not None and r.faster_under(card, effect) and not disputed(r)
             and (r.second_opinion is None or r.improves_under(card, effect))]
    return max(found, key=lambda v: v.deciding_ratio(tree.figure) or 0.0) if found else None


def second_opinions(ctx: OptimizeContext, tree: VariantTree, update: dict[str, Any],
                    budget: TimeBudget | None = None) -> list[str]:
    """Ask for a second opinion on the contender until one stands (it agrees, or none could be had and nothing
    asks for one), at most ``search.finalists`` times; each opinion kept on the contender's deciding verdict."""
    if tree.objective != "time" or not ctx.settings.harness.second_opinion:
        return []
    events: list[str] = []
    for _ in range(max(1, ctx.settings.search.finalists)):
        variant = contender(tree)
        if variant is None or variant.deciding_result.second_opinion is not None:
            break
        verdict = variant.deciding_result
        until = budget.in_flight_until() if budget is not None else None
        try:
            opinion = ctx.evaluate.second_opinion(ctx.problem, variant.source, verdict, until=until)
        except Exception as error:  # noqa: BLE001 - the verdict stands as the judge gave it; only the check is lost
            events.append(f"no second opinion on {variant.id} ({type(error).__name__}: {error})")
            break
        if ctx.device == "cuda" and opinion.elapsed_s:
            update["gpu_s"] = update.get("gpu_s", 0.0) + opinion.elapsed_s
        settled = settle(verdict, opinion)
        _keep(ctx, variant, settled)
        update.setdefault("variants", {})[variant.id] = variant.model_dump(mode="json")
        events.append(_event(variant, verdict, settled))
    return events


def _keep(ctx: OptimizeContext, variant: Variant, settled: EvalResult) -> None:
    """The settled verdict in place of the deciding one, in the tree and on disk (a resumed run reads it back)."""
    if variant.final is not None:
        variant.final = settled.model_dump(mode="json")
        ctx.files.store_result(f"{variant.id}.final", settled)
    else:
        variant.result = settled.model_dump(mode="json")
        ctx.files.store_result(variant.id, settled)


def _event(variant: Variant, verdict: EvalResult, settled: EvalResult) -> str:
    opinion = settled.second_opinion
    judged = speedup_text(verdict.speedup, verdict.speedup_ci95)
    head = f"second opinion on {variant.id} (judged {judged}), timed again in a fresh process: {opinion_text(opinion)}"
    if disputed(settled):
        return head + "; it does not count as an improvement until a re-judgment settles it"
    if not settled.timing_trusted:
        return head + "; below the memory floor, it counts only with an agreeing second opinion"
    return head


def _asked(tree: VariantTree) -> list[Variant]:
    """Variants whose deciding verdict carries a second opinion, fastest first by the judge."""
    found = [v for v in tree if v.kind != "reference" and (r := v.deciding_result) is not None
             and r.second_opinion is not None]
    return sorted(found, key=lambda v: -(v.deciding_speedup or 0.0))


def opinion_facts(tree: VariantTree, best: Variant | None) -> dict[str, Any] | None:
    """The second opinion a run reports (``summary.json``'s ``timing.second_opinion``): the best's, or with no best the
    one that disputed the fastest candidate asked about; None where none was asked for."""
    chosen = next((v for v in ([best] if best is not None else []) + _asked(tree)
                   if v.deciding_result.second_opinion is not None), None)
    if chosen is None:
        return None
    verdict = chosen.deciding_result
    opinion = verdict.second_opinion
    return {"variant": chosen.id, "status": opinion.status, "agrees": opinion.agrees, "speedup": opinion.speedup,
            "speedup_ci95": opinion.speedup_ci95, "judged_speedup": verdict.speedup,
            "judged_ci95": verdict.speedup_ci95, "reference_ms": opinion.reference_ms,
            "candidate_ms": opinion.candidate_ms, "rounds": opinion.rounds, "method": opinion.method,
            "message": opinion.message}


def untrusted_reason(tree: VariantTree) -> str | None:
    """Why the fastest candidate the judge called faster does not count, where its timing is not trusted (a second
    opinion disagreed, or none confirmed a time below the memory floor); None otherwise."""
    found = [v for v in tree if v.kind != "reference" and v.correct and not v.flagged
             and (r := v.deciding_result) is not None and r.faster_under(tree.scorecard, tree.min_effect)
             and not r.timing_trusted]
    if not found:
        return None
    variant = max(found, key=lambda v: v.deciding_speedup or 0.0)
    verdict = variant.deciding_result
    judged = f"{variant.id} measured {speedup_text(verdict.speedup, verdict.speedup_ci95)} by the judge"
    if disputed(verdict):
        return (f"{judged}, but a second opinion in a fresh process timed it at {opinion_text(verdict.second_opinion)}"
                if verdict.second_opinion is not None and verdict.second_opinion.speedup is not None else
                f"{judged}, but {next(g.message for g in verdict.guards if g.reason == TIMING_DISAGREEMENT)}") + \
            ": the timings disagree, so it does not count until a re-judgment settles it"
    return f"{judged}, below the memory floor, and no second opinion confirmed it"
