"""The time budget as a promise: no work starts that cannot end inside it, the finalists' re-judgment is paid
for out of it, and work in flight stops at its end.

What a candidate costs is learned from the run itself: each fresh verdict's duration (``EvalResult.elapsed_s``),
never less than the calls a judgment makes at the reference's measured speed, and the loop's own time per
candidate judged (planning, coding and profiling included). Before the first candidate's verdict, the compile
baselines the run judged before its search (``optimize --baselines``, as a suite's runs do) are its measured
judgments: their time counts against the budget, and a candidate is taken to cost what a baseline's judgment took,
so a run whose share cannot hold one more judgment judges none. Where no baseline was judged either, nothing is
measured: a candidate is taken to cost the judge's timing cap (``harness.timing_budget_s``), and a budget that
cannot hold even one at that price still judges one candidate: that first judgment, which measures the reference
as well, is the one step such a budget cannot cut. A finalist's re-judgment costs a judgment times
``search.finalist_rounds_factor``.

Work in flight has until the budget's end plus half the overrun allowed (``overrun_allowed_s``); the other half
is left for what follows it (the finalists' verdicts recorded, the report written).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernelpro.graphs.views import judged_count
from kernelpro.harness.deadline import planned_calls
from kernelpro.runs.overrun import overrun_allowed_s

if TYPE_CHECKING:
    from kernelpro.config import Settings
    from kernelpro.graphs.context import OptimizeContext
    from kernelpro.graphs.state import OptimizeState
    from kernelpro.search.tree import VariantTree


@dataclass(frozen=True)
class Costs:
    """What the next pieces of work are expected to take, in seconds."""

    judgment_s: float
    """One candidate's judgment."""
    candidate_s: float
    """One candidate through the whole loop, its judgment included."""
    finalist_s: float
    """One finalist's re-judgment."""
    measured: bool
    """From this run's verdicts; False before the first (the judge's caps stand in)."""


def run_costs(tree: VariantTree, spent_s: float, judged: int, settings: Settings,
              baselines: list[dict[str, Any]] | None = None) -> Costs:
    """The costs the run's verdicts so far imply (``judged``: the candidates judged, ``spent_s``: the time the
    loop has spent; ``baselines``: the verdicts of the compile baselines judged before the search, which stand in
    for a candidate's until one is judged)."""
    fresh = [v.result for v in tree if v.kind != "reference" and v.result is not None
             and not (v.result.get("details") or {}).get("answered_by") and v.result.get("elapsed_s")]
    if not fresh:
        fresh = [b for b in baselines or [] if b.get("elapsed_s")]
    factor = max(1.0, settings.search.finalist_rounds_factor)
    if not fresh:
        cap = settings.harness.timing_budget_s
        return Costs(judgment_s=cap, candidate_s=cap, finalist_s=cap * factor, measured=False)
    judgment = sum(r["elapsed_s"] for r in fresh) / len(fresh)
    reference_ms = [ms for r in fresh if (ms := (r.get("reference") or {}).get("median_ms") or r.get("reference_ms"))]
    if reference_ms:  # the calls a judgment makes, of both models, at the reference's speed at least
        judgment = max(judgment, planned_calls(settings.harness) * max(reference_ms) / 1e3)
    candidate = max(judgment, spent_s / judged) if judged else judgment
    return Costs(judgment_s=judgment, candidate_s=candidate, finalist_s=judgment * factor, measured=True)


@dataclass(frozen=True)
class TimeBudget:
    """A run's time budget as it stands: how much is left, and what the next work costs."""

    budget_s: float
    spent_s: float
    costs: Costs
    finalists: int
    """``search.finalists``: how many candidates the end of the run re-judges at most."""

    @property
    def left_s(self) -> float:
        return self.budget_s - self.spent_s

    def finalists_s(self, count: int) -> float:
        """The re-judgment of ``count`` finalists (at most ``finalists``)."""
        return min(max(count, 0), self.finalists) * self.costs.finalist_s

    def batch(self, wanted: int, finalists_now: int, judged_any: bool) -> int:
        """How many of ``wanted`` candidates to start now: as many as end, with the finalists' re-judgment after
        them (``finalists_now`` candidates are finalists already; each new one may become one), inside what is
        left. One when nothing was judged yet, whatever the budget: the first judgment is what measures."""
        for count in range(wanted, 0, -1):
            if count * self.costs.candidate_s + self.finalists_s(finalists_now + count) <= self.left_s:
                return count
        return min(wanted, 1) if not judged_any else 0

    def in_flight_until(self, now: float | None = None) -> float:
        """The ``time.monotonic()`` instant at which work started now is stopped."""
        now = time.monotonic() if now is None else now
        return now + max(self.left_s, 0.0) + overrun_allowed_s(self.budget_s) / 2

    def not_started(self, what: str) -> str:
        """What the budget cut, in words."""
        per = f"about {self.costs.candidate_s:.0f} s a candidate" if self.costs.measured else \
            f"up to {self.costs.candidate_s:.0f} s a candidate before any is measured (harness.timing_budget_s)"
        return f"time budget: {what} not started ({per}; {max(self.left_s, 0.0):.0f} s of {self.budget_s:.0f} s left)"


def baselines_judged(ctx: OptimizeContext) -> list[dict[str, Any]]:
    """The verdicts (as summarised) of the compile baselines the run judged before its search; none without."""
    files = getattr(ctx, "files", None)
    found = files.baselines() if files is not None else None
    return [b for b in (found or {}).values() if isinstance(b, dict)]


def run_time_budget(state: OptimizeState, ctx: OptimizeContext, tree: VariantTree) -> TimeBudget | None:
    """The run's time budget as it stands at this step, or None when it has none: the loop's time and the
    baselines' judgments before it are what it spent."""
    if ctx.budgets.time_s is None:
        return None
    baselines = baselines_judged(ctx)
    loop_s = state.get("elapsed_s", 0.0)
    costs = run_costs(tree, loop_s, judged_count(state), ctx.settings, baselines)
    spent = loop_s + sum(b.get("elapsed_s") or 0.0 for b in baselines)
    return TimeBudget(budget_s=ctx.budgets.time_s, spent_s=spent, costs=costs,
                      finalists=ctx.settings.search.finalists)
