"""A suite's time budget as a promise: what a problem's least useful work costs before it starts, when each job in
flight must stop, and when the suite will end.

A problem is worth starting only when its least useful work fits in what is left of the suite's time budget: its
process starting (``start_s``), the compile baselines it has still to judge, and one candidate's judgment. Each is
learned from the suite itself: the problem's own baselines' verdicts (a judgment of this very problem), else the
verdicts the suite's runs took (``elapsed_s``: the judge's wall seconds; the other problems' baselines where no run
directory holds any), and each finished problem's wall time
beyond its run's (the process, its imports, its outputs). Before any is measured, a judgment
costs the judge's timing cap (``harness.timing_budget_s``) and starting costs nothing known.

Every job in flight has a deadline: the suite's budget end, and never later than its own share plus the overrun a
run allows itself (``graphs.time_budget.overrun_allowed_s``). At its deadline the job is stopped the way a user
stops a run (SIGINT: the run records what it judged and stays resumable); half the suite's allowed overrun later
it is killed. So a suite ends within ``overrun_allowed_s`` of its ``--time-budget``: max(2%, 60 s).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from kernelpro.config import Settings
from kernelpro.runs.overrun import overrun_allowed_s
from kernelpro.suite.ledger import ProblemRow


@dataclass(frozen=True)
class ProblemCost:
    """A problem's least useful work, in seconds."""

    start_s: float
    """Its process starting and ending: the least wall time a finished problem's job took beyond its run's."""
    baselines_s: float
    """The compile baselines it has still to judge."""
    judgment_s: float
    """One candidate's judgment."""
    measured: bool
    """From this suite's verdicts; False when the judge's cap stands in."""

    @property
    def floor_s(self) -> float:
        return self.start_s + self.baselines_s + self.judgment_s

    def describe(self) -> str:
        baselines = [f"{self.baselines_s:.0f} s of baselines"] if self.baselines_s > 0 else []
        parts = [f"{self.start_s:.0f} s to start", *baselines, f"{self.judgment_s:.0f} s for one judgment"
                 + ("" if self.measured else " (harness.timing_budget_s, nothing measured yet)")]
        return f"about {self.floor_s:.0f} s ({', '.join(parts)})"


def _elapsed(verdicts: list[dict[str, Any]]) -> list[float]:
    return [float(v["elapsed_s"]) for v in verdicts if isinstance(v, dict) and (v.get("elapsed_s") or 0) > 0]


def problem_cost(row: ProblemRow, rows: list[ProblemRow], wanted_baselines: list[str],
                 verdicts: list[dict[str, Any]], settings: Settings) -> ProblemCost:
    """What starting ``row`` costs at the least. ``rows``: the suite's problems; ``wanted_baselines``: the compile
    baselines its run would judge (none when the ledger holds them); ``verdicts``: every verdict the suite's runs
    took (``device_time.judged_verdicts``)."""
    own = _elapsed(list((row.baselines or {}).values()))
    others = [s for r in rows if r.key != row.key for s in _elapsed(list((r.baselines or {}).values()))]
    judged = _elapsed(verdicts) or others
    if own or judged:  # its own judgments first: another problem's size says little of this one's
        judgment, measured = statistics.median(own or judged), True
    else:
        judgment, measured = settings.harness.timing_budget_s, False
    per_baseline = statistics.median(others) if others else judgment
    # a finished run's wall time (its summary's, from its directory's making) against its job's: the difference
    # is the process starting and ending
    starts = [max(0.0, r.wall_s - (r.run_outcome.wall_seconds or 0.0)) for r in rows
              if r.finished and (r.wall_s or 0) > 0 and r.run_outcome.wall_seconds]
    return ProblemCost(start_s=min(starts) if starts else 0.0, baselines_s=per_baseline * len(wanted_baselines),
                       judgment_s=judgment, measured=measured)


def unaffordable(cost: ProblemCost, total_s: float, active_s: float) -> str | None:
    """Why a problem is not started under the suite's time budget (its least work cannot end in what is left of
    ``total_s`` once ``active_s`` are spent), or None."""
    left = total_s - active_s
    if cost.floor_s <= left:
        return None
    return f"it needs {cost.describe()} and {max(left, 0.0):.0f} s of the suite's {total_s:.0f} s time budget are left"


@dataclass(frozen=True)
class Deadline:
    """When a job in flight is stopped (cleanly: SIGINT) and when it is killed, in seconds from its start."""

    stop_s: float
    kill_s: float


def job_deadline(total_s: float | None, active_s: float, share_s: float | None) -> Deadline | None:
    """The deadline of a job started now: the suite's budget end (``total_s`` less the ``active_s`` spent),
    never later than its ``share_s`` plus the overrun a run allows itself; killed half the suite's allowed overrun
    after it. None without a time budget."""
    if total_s is None:
        return None
    left = max(0.0, total_s - active_s)
    stop = left if share_s is None else min(left, share_s + overrun_allowed_s(share_s))
    return Deadline(stop_s=stop, kill_s=stop + overrun_allowed_s(total_s) / 2)


def eta_s(rows: list[ProblemRow], lanes: int, total_s: float | None, active_s: float) -> float | None:
    """Seconds until the suite ends: the problems not finished, at the mean wall time of those finished, over the
    lanes; never past the time budget's end (with its allowed overrun). None before any problem finished."""
    walls = [r.wall_s for r in rows if r.finished and (r.wall_s or 0) > 0]
    left = sum(not r.finished for r in rows)
    if not left:
        return 0.0
    if not walls:
        return None
    eta = statistics.mean(walls) * -(-left // max(1, lanes))
    if total_s is not None:
        eta = min(eta, max(0.0, total_s - active_s) + overrun_allowed_s(total_s))
    return eta
