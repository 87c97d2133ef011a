"""Plain-text views of the run for prompts, events and memory records, and the budget check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kernelpro.agents.templates import fence
from kernelpro.harness.result import EvalResult, headline
from kernelpro.harness.timing.stats import CALL_WORDS
from kernelpro.problem import Problem
from kernelpro.search.objective import energy_text
from kernelpro.search.tree import Variant, VariantTree, speedup_text

if TYPE_CHECKING:
    from kernelpro.graphs.context import OptimizeContext
    from kernelpro.graphs.state import OptimizeState
    from kernelpro.recipes.catalogue import Recipe


def variant_label(variant: Variant) -> str:
    if variant.kind == "reference":
        return "the reference"
    speed = f", {speedup_text(variant.deciding_speedup, variant.speedup_ci95)}" if variant.speedup is not None else ""
    return f"{variant.id} ({variant.kind}{speed})"


def describe_result(result: EvalResult) -> str:
    if result.status == "ok":
        timing = ""
        if result.candidate_ms is not None and result.reference_ms is not None:
            timing = f" ({result.candidate_ms:.4g} ms vs reference {result.reference_ms:.4g} ms)"
        if result.speedup is None:
            return f"ok, correct, not timed{timing}"
        speed = speedup_text(result.speedup, result.speedup_ci95)
        call = CALL_WORDS.get(result.speed_verdict or "", "")
        notes = [call] if call else []
        notes += ["host-bound reference"] if result.host_bound else []
        notes += ["timed on a busy machine"] if result.contended else []
        energy = energy_text(result)
        return f"ok, {speed}" + (f" {', '.join(notes)}" if notes else "") + timing + (f"; {energy}" if energy else "")
    reason = f"/{result.reason}" if result.reason else ""
    first_line = headline(result.message)
    return f"{result.status}{reason}" + (f": {first_line}" if first_line else "")


def variant_summary(variant: Variant) -> str:
    if variant.kind == "reference":
        return "The PyTorch reference, speedup 1.00x by definition."
    lines = [f"Idea: {variant.idea}"]
    if variant.result:
        result = EvalResult.model_validate(variant.result)
        lines.append(f"Judge: {describe_result(result)}")
        if result.status != "ok" and result.message:
            lines.append(f"Judge's message:\n{result.message.strip()[:1500]}")
    return "\n".join(lines)


def measurement_text(variant: Variant) -> str:
    """What the judge measured for a variant (its verdict and times), without its idea."""
    if variant.kind == "reference":
        return "the PyTorch reference, 1.00x by definition"
    return describe_result(EvalResult.model_validate(variant.result)) if variant.result else "not judged"


def best_under_objective(best: Variant, objective: str) -> str:
    """The best's figure under an energy objective with its time beside it, so a saving bought by running slower
    reads as what it is."""
    speed = EvalResult.model_validate(best.final or best.result or {"status": "ok"})
    time = f"time {speedup_text(best.deciding_speedup, best.speedup_ci95)} {speed.speed_verdict or ''}".rstrip()
    slower = "; slower than the reference: an energy saving, not a speedup" if speed.speed_verdict == "slower" \
        else ""
    return f"{best.figure_text(objective)} ({time}{slower})"


LEADERBOARD_HEADINGS = {
    "energy": "Earlier variants, least energy first (energy ratio: the reference's joules per call over the "
              "variant's, then its speedup; failures say why). This run optimises energy per call: an idea that "
              "uses less energy counts even when it is no faster",
    "edp": "Earlier variants, lowest energy-delay product first (EDP ratio: the reference's joules times seconds per "
           "call over the variant's, then its speedup; failures say why). This run optimises energy times time",
}
"""The planner's leaderboard heading under an energy objective (the planner's default is the time one)."""


def leaderboard_text(tree: VariantTree, n: int = 6) -> str:
    """The leaderboard for the planner: each variant's speedup, and under an energy objective its energy (or EDP)
    ratio first, the variants best first under that objective."""
    rows = []
    for variant in tree.leaderboard(n):
        outcome = (speedup_text(variant.deciding_speedup, variant.speedup_ci95) if variant.speedup is not None
                   else describe_result(EvalResult.model_validate(variant.result)) if variant.result else "not judged")
        if variant.speedup is not None and tree.objective != "time":
            outcome = f"{variant.figure_text(tree.objective)}, time {outcome}"
        notes = variant.profile_notes or variant.no_profile
        profiled = f"; profile: {notes.splitlines()[0][:200]}" if notes else ""
        rows.append(f"- {variant.id} [{variant.kind}] {outcome}: {variant.idea[:300]}{profiled}")
    return "\n".join(rows) or "none yet: this is the first attempt"


CHARS_PER_TOKEN = 4  # a rough count for code; the budget is a bound on prompt size, not a tokenizer's figure


def variants_code(tree: VariantTree, token_budget: int) -> str:
    """The code of the leaderboard's variants (fastest first, the slowest last for contrast), whole files while
    they fit in ``token_budget``; a variant that does not fit is named with how much was left out."""
    left = token_budget * CHARS_PER_TOKEN
    parts = []
    for variant in tree.leaderboard():
        label = f"### {variant.id} ({variant.kind}, {speedup_text(variant.deciding_speedup, variant.speedup_ci95)})"
        if len(variant.source) > left:
            parts.append(f"{label}\n(code left out: {len(variant.source)} characters over the prompt's budget)")
            continue
        left -= len(variant.source)
        parts.append(f"{label}\n{fence(variant.source.strip())}")
    return "\n\n".join(parts) or "none yet: this is the first attempt"


def recipes_text(recipes: Sequence[Recipe]) -> str:
    """The recipes the planner may pick, one line each: the name to give as the idea's title, and what it does."""
    return "\n".join(f"- `{r.name}`: {r.idea}" for r in recipes) or "none apply here"


def recipe_lesson(variant: Variant, problem: str, gpu: str) -> str:
    """The lesson a run without a language model records: what was tried, what it measured, what limited it."""
    if variant.result is None:
        return f"{problem} on {gpu}: {variant.idea} produced no candidate."
    outcome = describe_result(EvalResult.model_validate(variant.result))
    limiter = f" Top finding: {variant.findings[0]}." if variant.findings else ""
    return f"{problem} on {gpu}: {variant.idea} -> {outcome}.{limiter}"


def attempt_records(variant: Variant, run_id: str, problem: Problem, gpu: str) -> list[Any]:
    from kernelpro.memory.records import Attempt, CompileFix, Insight, ProblemSignature  # ChromaDB only when used

    signature = ProblemSignature.from_problem(problem)
    result = EvalResult.model_validate(variant.result) if variant.result else None
    diagnosis = variant.findings[0] if variant.findings else ""  # the top finding id; set with the diagnosis
    if result is not None and result.status != "ok":
        diagnosis = describe_result(result)[:300]
    if result is not None and result.contended:
        return []  # a figure measured on a busy machine teaches nothing about the candidate
    records: list[Any] = [Attempt(run_id=run_id, problem=signature, gpu=gpu, idea=variant.idea[:600],
                                  outcome=result.status if result else "compile_error", speedup=variant.speedup,
                                  speedup_ci95=result.speedup_ci95 if result else None,
                                  speed_verdict=result.speed_verdict if result else None,
                                  diagnosis=diagnosis, candidate_id=variant.id, tags=variant.techniques,
                                  origin=variant.origin)]
    if variant.lesson:
        records.append(Insight(run_id=run_id, text=variant.lesson, problem=signature, gpu=gpu,
                               tags=variant.techniques))
    for error, fix in variant.compile_fixes:
        records.append(CompileFix(error=error[:1500], fix=fix, backend=variant.kind, run_id=run_id,
                                  problem=signature))
    return records


def judged_count(state: OptimizeState) -> int:
    """Candidates the judge measured in this run: what ``max_iters`` counts. A candidate answered from a verdict
    taken before the run (a suite's compile baseline) cost nothing, so it leaves the budget to the next."""
    return state.get("iteration", 0) - state.get("answered_before", 0)


def stop_reason(state: OptimizeState, ctx: OptimizeContext) -> tuple[str, str] | None:
    """Why the run must stop now and with which status, or None to carry on.

    Judging every candidate asked for completes a run; a time, GPU or dollar budget cuts it short (stopped).
    """
    budgets = ctx.budgets
    if judged_count(state) >= budgets.max_iters:
        judged = f"{budgets.max_iters} candidate{'s' if budgets.max_iters != 1 else ''} judged"
        return f"iteration budget reached ({judged})", "completed"
    if budgets.time_s is not None and state.get("elapsed_s", 0.0) >= budgets.time_s:
        return f"time budget spent ({state.get('elapsed_s', 0.0):.0f} s of {budgets.time_s:.0f} s)", "stopped"
    if budgets.gpu_s is not None and state.get("gpu_s", 0.0) >= budgets.gpu_s:
        return f"GPU budget spent ({state.get('gpu_s', 0.0):.0f} s of {budgets.gpu_s:.0f} s)", "stopped"
    if budgets.usd is not None and ctx.meter is not None and ctx.meter.spent_usd >= budgets.usd:
        return f"LLM budget spent (${ctx.meter.spent_usd:.2f} of ${budgets.usd:.2f})", "stopped"
    return None
