"""The field's scores over a suite: fast_p, the geometric-mean speedup, the correctness rate, per level, and what
they cost.

fast_p is KernelBench's: the share of all scored problems that are correct and faster than the baseline by
more than p (``speedup > p``), so fast_0 is the correctness rate. A problem's speedup is what the run delivers:
its best's, as the finalists' re-judgment measured it, when the run found one measurably faster; otherwise the
run keeps the reference, and its speedup is 1 (a gain within the noise is no gain, and a slower candidate is
never what a user is handed). The fastest correct candidate's own speedup is kept beside it, for the table. A
problem cut by a time budget before it found an improvement (ledger state ``budget``: the suite's deadline stopped
its run, or its share ended the run) keeps the reference too: it counts as correct at 1, never as incorrect,
whatever candidates it judged before the cut, so it adds to fast_p for every p below 1 and to the geomean at 1. A
problem that failed counts as incorrect. Against a compile baseline, the speedup is that one divided by the fastest
correct compile baseline's speedup over eager (eager itself when no compile baseline ran correctly). Problems
the judge found degenerate (outputs that do not depend on the inputs) are scored apart, and unfinished ones not
at all. Problems whose eager time is bound by the host (``baselines.reference_host_bound``, else the run's own
verdicts where no baseline timed eager) are counted apart too: there a whole-forward CUDA graph is the lever, and
the share of them improved says whether it was pulled. The geomean comes with a 95% interval and each fast_p
with the range the problems' own intervals allow (``score_intervals``).

The same scores are also read in KernelBench's convention (``Scores.kernelbench``): each problem's delivered
best at its speedup in that convention (``best_kernelbench`` of the run's summary: the mean of CUDA events behind
the L2 flush, no host floor), the reference kept at 1 as above. A best without that figure (judged with the
referee off) is left out of those scores and counted as ``unmeasured``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kernelpro.harness.timing.stats import Measured
from kernelpro.runs.outcome import RunOutcome
from kernelpro.suite.baselines import fastest_compile, reference_host_bound
from kernelpro.suite.ledger import FINISHED, ProblemRow
from kernelpro.suite.score_intervals import fast_p_range, geomean_interval

FAST_P = (0.0, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0)


def p_key(p: float) -> str:
    """0 -> "0", 1 -> "1.0", 1.2 -> "1.2": the keys of ``fast_p``."""
    return "0" if p == 0 else f"{p:.1f}"


@dataclass(frozen=True)
class ProblemScore:
    key: str
    level: int | None
    state: str
    correct: bool
    improved: bool
    speedup: float | None
    """Over eager (the reference), as described in the module's docstring; None when not correct."""
    fastest_candidate: float | None
    """The fastest correct candidate's speedup as first judged, whether or not it counted."""
    speedup_ci95: list[float] | None
    vs_compile: float | None
    compile_baseline: str | None
    degenerate: str | None
    host_bound: bool | None
    """Whether eager's cost is its launches, as the baselines' verdicts measured it, else the run's own (None:
    not measured)."""
    gpu_s: float
    usd: float
    measured: Measured | None = None
    """``speedup`` with its interval (exact for a kept reference)."""
    measured_vs_compile: Measured | None = None
    """``vs_compile`` with its interval: the speedup's and the compile baseline's combined."""
    kernelbench: Measured | None = None
    """The delivered speedup in KernelBench's convention with its interval (1 exactly for a kept reference);
    None when not correct, or when the best has no such figure (``kernelbench_unmeasured``)."""
    kernelbench_unmeasured: bool = False

    @property
    def vs_compile_ci95(self) -> list[float] | None:
        found = self.measured_vs_compile
        return [found.low, found.high] if found is not None and found.high > found.low else None

    @property
    def scored(self) -> bool:
        return self.state in FINISHED and self.degenerate is None

    @property
    def cut_by_budget(self) -> bool:
        """Cut by a time budget before an improvement: the reference kept."""
        return self.state == "budget"


def score_problem(row: ProblemRow) -> ProblemScore:
    result = row.run_outcome
    kept_by_budget = row.state == "budget"  # the reference is what the problem delivers: correct, at 1
    correct = kept_by_budget or (row.state == "done" and result.correct_candidates > 0)
    improved = correct and not kept_by_budget and result.improved
    if improved:
        speedup, interval = result.best_speedup, result.best_speedup_ci95
    elif correct:
        speedup, interval = 1.0, None  # the reference, kept
    else:
        speedup, interval, correct = None, None, False
    compiled = fastest_compile(row.baselines)
    vs_compile = None if speedup is None else speedup / (compiled[1] if compiled else 1.0)
    measured = Measured.of(speedup, interval) if speedup is not None else None
    baseline = Measured.of(compiled[1], (row.baselines or {})[compiled[0]].get("speedup_ci95")) if compiled \
        else Measured.of(1.0, None)
    kernelbench, unmeasured = _kernelbench(result, correct, improved)
    return ProblemScore(key=row.key, level=row.level, state=row.state, correct=correct, improved=improved,
                        kernelbench=kernelbench, kernelbench_unmeasured=unmeasured,
                        speedup=speedup, speedup_ci95=interval, vs_compile=vs_compile,
                        fastest_candidate=result.fastest_correct_speedup if correct else None,
                        compile_baseline=compiled[0] if compiled else None,
                        degenerate=result.degenerate if row.state in ("done", "budget") else None,
                        host_bound=_host_bound(row.baselines, result),
                        gpu_s=row.gpu_s or 0.0, usd=row.usd or 0.0, measured=measured,
                        measured_vs_compile=measured.over(baseline) if measured is not None else None)


def _kernelbench(result: RunOutcome, correct: bool, improved: bool) -> tuple[Measured | None, bool]:
    """The delivered speedup in KernelBench's convention, and whether an improved best lacks that figure."""
    if not correct:
        return None, False
    if not improved:
        return Measured.of(1.0, None), False
    found = result.best_kernelbench or {}
    if found.get("speedup") is None:
        return None, True
    return Measured.of(found["speedup"], found.get("speedup_ci95")), False


def kernelbench_scores(problems: list[ProblemScore]) -> dict[str, Any]:
    """fast_p and the geomean of the scored problems read in KernelBench's convention, over those with the
    figure; ``unmeasured``: improved problems whose best has none."""
    scored = [p for p in problems if p.scored and not p.kernelbench_unmeasured]
    speedups = [p.kernelbench.value if p.kernelbench is not None else None for p in scored]
    measured = [p.kernelbench for p in scored if p.kernelbench is not None]
    return {"problems_scored": len(scored), "unmeasured": sum(p.scored and p.kernelbench_unmeasured for p in problems),
            "fast_p": fast_p(speedups, len(scored)),
            "geomean_speedup": geomean([s for s in speedups if s]),
            "geomean_speedup_ci95": geomean_interval(measured),
            "fast_p_range": _ranges([p.kernelbench for p in scored], len(scored))}


def _host_bound(baselines: dict[str, Any] | None, result: RunOutcome) -> bool | None:
    """The baselines' word on eager's cost; where none of them timed it (every compile baseline incorrect, say),
    the run's own verdicts', each of which timed the reference beside its candidate."""
    found = reference_host_bound(baselines)
    return found if found is not None else result.reference_host_bound


def fast_p(speedups: list[float | None], total: int) -> dict[str, float]:
    """p -> the share of ``total`` problems with a (correct) speedup above p."""
    return {p_key(p): (sum(1 for s in speedups if s is not None and s > p) / total if total else 0.0)
            for p in FAST_P}


def _ranges(measured: list[Measured | None], total: int) -> dict[str, list[float]]:
    return {p_key(p): shares for p, shares in fast_p_range(measured, total, FAST_P).items()}


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


@dataclass
class Scores:
    problems: int
    """Scored problems: finished, not degenerate."""
    correct: int
    improved: int
    fast_p: dict[str, float]
    fast_p_vs_compile: dict[str, float]
    geomean_speedup: float | None
    geomean_vs_compile: float | None
    correct_rate: float
    gpu_seconds: float
    llm_cost_usd: float
    host_bound: int = 0
    """Scored problems whose eager time is bound by the host."""
    host_bound_improved: int = 0
    budget: int = 0
    """Scored problems cut by a time budget before an improvement: counted correct, at 1 (the reference kept)."""
    per_level: dict[str, dict[str, Any]] = field(default_factory=dict)
    geomean_speedup_ci95: list[float] | None = None
    geomean_vs_compile_ci95: list[float] | None = None
    fast_p_range: dict[str, list[float]] = field(default_factory=dict)
    """p -> [the share surely above p, the share possibly above it], by the problems' intervals."""
    fast_p_vs_compile_range: dict[str, list[float]] = field(default_factory=dict)
    kernelbench: dict[str, Any] = field(default_factory=dict)
    """The same scores in KernelBench's convention (``kernelbench_scores``)."""

    def spend(self) -> dict[str, float | None]:
        """GPU-minutes and dollars per problem and per problem improved."""
        minutes = self.gpu_seconds / 60
        return {"gpu_minutes_per_problem": minutes / self.problems if self.problems else None,
                "gpu_minutes_per_improved": minutes / self.improved if self.improved else None,
                "usd_per_problem": self.llm_cost_usd / self.problems if self.problems else None,
                "usd_per_improved": self.llm_cost_usd / self.improved if self.improved else None}

    def to_dict(self) -> dict[str, Any]:
        return {"problems_scored": self.problems, "correct": self.correct, "improved": self.improved,
                "fast_p": self.fast_p, "fast_p_vs_compile": self.fast_p_vs_compile,
                "geomean_speedup": self.geomean_speedup, "geomean_speedup_vs_compile": self.geomean_vs_compile,
                "correct_rate": self.correct_rate, "gpu_seconds": self.gpu_seconds,
                "llm_cost_usd": self.llm_cost_usd, **self.spend(), "host_bound": self.host_bound,
                "host_bound_improved": self.host_bound_improved, "budget": self.budget, "per_level": self.per_level,
                "geomean_speedup_ci95": self.geomean_speedup_ci95,
                "geomean_speedup_vs_compile_ci95": self.geomean_vs_compile_ci95,
                "fast_p_range": self.fast_p_range, "fast_p_vs_compile_range": self.fast_p_vs_compile_range,
                "kernelbench": self.kernelbench}


def _scores(problems: list[ProblemScore], spend_from: list[ProblemScore]) -> Scores:
    scored = [p for p in problems if p.scored]
    correct = [p for p in scored if p.correct]
    return Scores(
        problems=len(scored), correct=len(correct), improved=sum(p.improved for p in scored),
        fast_p=fast_p([p.speedup for p in scored], len(scored)),
        fast_p_vs_compile=fast_p([p.vs_compile for p in scored], len(scored)),
        geomean_speedup=geomean([p.speedup for p in correct if p.speedup]),
        geomean_vs_compile=geomean([p.vs_compile for p in correct if p.vs_compile]),
        correct_rate=len(correct) / len(scored) if scored else 0.0,
        gpu_seconds=sum(p.gpu_s for p in spend_from), llm_cost_usd=sum(p.usd for p in spend_from),
        host_bound=sum(bool(p.host_bound) for p in scored),
        host_bound_improved=sum(bool(p.host_bound) and p.improved for p in scored),
        budget=sum(p.cut_by_budget for p in scored),
        geomean_speedup_ci95=geomean_interval([p.measured for p in correct if p.measured]),
        geomean_vs_compile_ci95=geomean_interval([p.measured_vs_compile for p in correct if p.measured_vs_compile]),
        fast_p_range=_ranges([p.measured for p in scored], len(scored)),
        fast_p_vs_compile_range=_ranges([p.measured_vs_compile for p in scored], len(scored)),
        kernelbench=kernelbench_scores(problems))


def suite_scores(rows: list[ProblemRow]) -> tuple[Scores, list[ProblemScore]]:
    """The suite's scores (spend over every problem, degenerate ones included) and each problem's."""
    problems = [score_problem(row) for row in rows]
    scores = _scores(problems, problems)
    levels = sorted({p.level for p in problems if p.level is not None})
    for level in levels:
        mine = [p for p in problems if p.level == level]
        level_scores = _scores(mine, mine)
        scores.per_level[str(level)] = {k: v for k, v in level_scores.to_dict().items() if k != "per_level"}
    return scores, problems
