"""The finalists re-judged head to head with the reference at the end of a run; their verdicts decide the best.

Under a time budget the re-judgment is paid for out of it: when what is left cannot hold it, or the budget's end
stops it in flight, the finalists keep their first verdicts and the run says so."""

from __future__ import annotations

from typing import Any

from kernelpro.graphs.context import OptimizeContext
from kernelpro.graphs.second_opinions import disputed
from kernelpro.graphs.time_budget import TimeBudget
from kernelpro.graphs.views import describe_result
from kernelpro.harness.result import CUT_AT_DEADLINE
from kernelpro.search.tree import VariantTree, speedup_text

STANDS = "the best stands on its first judgment"


def rejudge_finalists(ctx: OptimizeContext, tree: VariantTree, update: dict[str, Any],
                      budget: TimeBudget | None = None) -> list[str]:
    """Judge the top candidates again, head to head with the reference, and keep what that says on each (within
    ``budget``, the run's time budget as it stands, when it has one)."""
    finalists = tree.finalists(ctx.settings.search.finalists)
    if not finalists:
        worse = len(tree.correct())
        return [f"no finalist re-judged: the {worse} correct candidate(s) each measured "
                f"{'slower' if tree.objective == 'time' else 'worse'} than the reference beyond its interval"] \
            if worse else []
    stored = {v.id: ctx.files.stored_result(f"{v.id}.final", v.source) for v in finalists}
    stored = {key: None if disputed(result) else result for key, result in stored.items()}  # settled afresh
    todo = [v for v in finalists if stored[v.id] is None]
    until = None
    if budget is not None and todo:
        needed = budget.finalists_s(len(todo))
        if needed > budget.left_s:
            return [f"time budget: finalists not re-judged (about {needed:.0f} s needed, "
                    f"{max(budget.left_s, 0.0):.0f} s of {budget.budget_s:.0f} s left); {STANDS}"]
        until = budget.in_flight_until()
    for variant in todo:
        ctx.files.write_source(f"{variant.id}.final", variant.source)
    try:
        fresh = dict(zip([v.id for v in todo],
                         ctx.evaluate.rejudge(ctx.problem, [v.source for v in todo], until=until), strict=True))
    except Exception as error:  # noqa: BLE001 - the run's verdicts stand; only the second look is lost
        return [f"finalists could not be re-judged ({type(error).__name__}: {error}); the first verdicts decide"]
    if ctx.device == "cuda":
        update["gpu_s"] = sum(r.device_s for r in fresh.values())
    if any(r.reason == CUT_AT_DEADLINE for r in fresh.values()):
        return [f"time budget: the finalists' re-judgment was stopped at the budget's end; {STANDS}"]
    events = [f"finalists re-judged head to head with the reference: {', '.join(v.id for v in finalists)}"]
    for variant in finalists:
        result = stored[variant.id] or fresh[variant.id]
        variant.final = result.model_dump(mode="json")
        ctx.files.record_result(f"{variant.id}.final", result, {"final_of": variant.id, **result.to_json_dict()})
        events.append(f"final {variant.id}: {describe_result(result)} (first judged "
                      f"{speedup_text(variant.speedup, (variant.result or {}).get('speedup_ci95'))})")
    update["variants"] = {v.id: v.model_dump(mode="json") for v in finalists}
    return events
