"""The finalists re-judged head to head with the reference at the end of a run; their verdicts decide the best."""

from __future__ import annotations

from typing import Any

from kernelpro.graphs.context import OptimizeContext
from kernelpro.graphs.views import describe_result
from kernelpro.search.tree import VariantTree, speedup_text


def rejudge_finalists(ctx: OptimizeContext, tree: VariantTree, update: dict[str, Any]) -> list[str]:
    """Judge the top candidates again, head to head with the reference, and keep what that says on each."""
    finalists = tree.finalists(ctx.settings.search.finalists)
    if not finalists:
        worse = len(tree.correct())
        return [f"no finalist re-judged: the {worse} correct candidate(s) each measured "
                f"{'slower' if tree.objective == 'time' else 'worse'} than the reference beyond its interval"] \
            if worse else []
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
    update["variants"] = {v.id: v.model_dump(mode="json") for v in finalists}
    if ctx.device == "cuda":
        update["gpu_s"] = sum(r.device_s for r in fresh.values())
    return events
