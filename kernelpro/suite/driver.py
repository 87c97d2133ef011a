"""The suite's driver: hands problems to free lanes, records each outcome in the ledger, keeps the report current.

The driver is the ledger's only writer. A problem's run id is in the ledger before its run starts, so after a kill
(the driver's, a lane's, a Ray node's) the problem is started again as ``optimize --resume`` of that run, which
judges nothing twice. A problem whose worker was lost (a Ray actor or node gone, its run killed from outside) is
started again up to ``suite.max_attempts`` times; one that crashes, hangs or is not a usable problem is recorded
failed with the reason, and the suite goes on. A run that cannot be set up at all (optimize's exit code
``SETUP_FAILED``: a dependency that does not import, a judge that cannot start) is the machine's fault: every
problem would fail alike, so the suite stops, the problem stays pending and a resume after the fix runs it. One that
ran out of GPU memory beside other lanes' problems on its GPU runs again alone there (``suite/alone.py``).

Under a time budget (``suite/estimate.py``) a problem starts only when its least useful work fits in what is left
(else it stays pending, and the suite says what it needed), each job has a deadline at which its run is stopped as
a user stops one, and a problem whose run a time budget cut before it found an improvement is recorded ``budget``:
it keeps the reference.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kernelpro.config import Settings
from kernelpro.harness.timing.stats import speedup_text
from kernelpro.runs.outcome import RunOutcome
from kernelpro.suite import alone, budget, estimate, overnight
from kernelpro.suite.baselines import compile_baselines
from kernelpro.suite.device_time import judged_verdicts
from kernelpro.suite.job import JobOutcome, JobSpec
from kernelpro.suite.lanes import Lane
from kernelpro.suite.layout import SuiteConfig, SuitePaths
from kernelpro.suite.ledger import UNFINISHED, Ledger, ProblemRow
from kernelpro.suite.recorded_env import settings_environment
from kernelpro.suite.scores import score_problem


def _unusable(row: ProblemRow) -> str | None:
    """Why the problem file is not a KernelBench-format problem (read and parsed, never run), or None."""
    from kernelpro.problem import ProblemError, load_problem

    try:
        load_problem(row.path)
    except ProblemError as error:
        return str(error)
    return None


def _setup_error(line: str) -> str:
    """The error inside optimize's "could not set up the run (...)" line, without its own resume advice."""
    found = re.search(r"could not set up the run \((.*)\); fix it", line)
    return found.group(1) if found else line.removeprefix("error: ")


class Backend(Protocol):
    name: str
    lanes: list[Lane]

    def start(self, spec: JobSpec, lane: Lane) -> None: ...

    def wait(self, timeout_s: float) -> list[tuple[str, JobOutcome]]: ...

    def close(self) -> None: ...


@dataclass
class Progress:
    """What the terminal shows while a suite runs."""

    total: int
    done: int = 0
    failed: int = 0
    running: dict[str, str] = field(default_factory=dict)  # lane -> problem key
    best: tuple[str, float] | None = None  # problem key, speedup
    best_ci95: list[float] | None = None  # the best's interval
    gpu_s: float = 0.0
    usd: float = 0.0
    eta_s: float | None = None
    last: str = ""  # the latest event, one line


def best_so_far(rows: list[ProblemRow]) -> tuple[str, float] | None:
    """The finished problem with the highest improved speedup, as (key, speedup): a resumed suite shows its earlier
    sessions' best, not only its own."""
    improved = [p for p in map(score_problem, rows) if p.state == "done" and p.improved and p.speedup]
    return max(((p.key, p.speedup) for p in improved), key=lambda item: item[1]) if improved else None


class Driver:
    def __init__(self, paths: SuitePaths, ledger: Ledger, settings: Settings, backend: Backend,
                 on_progress: Callable[[Progress], None] | None = None,
                 after_problem: Callable[[], None] | None = None) -> None:
        self.paths, self.ledger, self.settings, self.backend = paths, ledger, settings, backend
        self.config = SuiteConfig.model_validate(ledger.suite()["config"])
        self.on_progress = on_progress or (lambda progress: None)
        self.after_problem = after_problem or (lambda: None)
        self._last_tick = time.monotonic()
        self.setup_failure: str | None = None  # why a run could not be set up here: the suite stops

    # -- budgets ----------------------------------------------------------------------------------------------
    def _tick(self) -> None:
        """Count the time since the last tick as the suite's active time (kept across kills and resumes)."""
        now = time.monotonic()
        self.ledger.add_active(now - self._last_tick)
        self._last_tick = now

    def _active_s(self) -> float:
        return float(self.ledger.suite().get("active_s") or 0.0) + time.monotonic() - self._last_tick

    def _spent(self, rows: list[ProblemRow]) -> budget.Limits:
        return budget.Limits(time_s=self._active_s(), gpu_s=sum(r.gpu_s or 0.0 for r in rows),
                             usd=sum(r.usd or 0.0 for r in rows))

    def _baselines_to_judge(self, row: ProblemRow) -> list[str]:
        return compile_baselines(self.config.baselines) if row.baselines is None else []

    def _cost(self, row: ProblemRow, rows: list[ProblemRow]) -> estimate.ProblemCost:
        verdicts = judged_verdicts(self.paths.root, [(r.key, r.run_id or "") for r in rows])
        return estimate.problem_cost(row, rows, self._baselines_to_judge(row), verdicts, self.settings)

    def _too_costly(self, row: ProblemRow, rows: list[ProblemRow]) -> str | None:
        total = self.config.totals.time_s
        return None if total is None else estimate.unaffordable(self._cost(row, rows), total, self._active_s())

    def _spec(self, row: ProblemRow, lane: Lane, left: int, rows: list[ProblemRow],
              left_keys: list[str] | None = None) -> JobSpec:
        plan = self.config.overnight  # its shares follow each problem's estimated cost (``suite/overnight.py``)
        weights = {} if plan is None or left_keys is None else \
            {"weight": plan.weight(row.key), "weight_left": sum(map(plan.weight, left_keys))}
        share = budget.share(self.config.totals, self.config.per_problem, self._spent(rows), left,
                             len(self.backend.lanes), **weights)
        suite = self.settings.suite
        timeout = suite.problem_timeout_s if share.time_s is None else \
            min(suite.problem_timeout_s, share.time_s + suite.hang_grace_s)
        deadline = estimate.job_deadline(self.config.totals.time_s, self._active_s(), share.time_s)
        if share.time_s is not None:  # the run's budget is its share less its process's own start and end
            start_s = self._cost(row, rows).start_s if self.config.totals.time_s is not None else 0.0
            share = share.model_copy(update={"time_s": max(1.0, share.time_s - start_s)})
        return JobSpec(key=row.key, path=row.path, run_id=row.run_id or "", runs_dir=str(self.paths.runs),
                       log_dir=str(self.paths.logs), device=self.config.device, max_iters=self.config.max_iters,
                       budgets=share, policy=self.config.policy, objective=self.config.objective,
                       model=self.config.model,
                       baselines=self._baselines_to_judge(row),
                       no_memory=self.config.no_memory, no_profile=self.config.no_profile, timeout_s=timeout,
                       stop_after_s=deadline.stop_s if deadline else None, more_budget=row.failure_kind == "budget",
                       kill_after_s=deadline.kill_s if deadline else None,
                       # the driver's settings travel with the job, to a Ray node's shell as to a local one's
                       env={**settings_environment(), **lane.env})

    # -- outcomes ---------------------------------------------------------------------------------------------
    def _record(self, outcome: JobOutcome, progress: Progress) -> None:
        row = self.ledger.problem(outcome.key)
        # none yet when the run died before judging them: the problem's next attempt judges them
        baselines = outcome.baselines if outcome.baselines is not None else row.baselines
        # the baselines' device time, whichever attempt measured them (a retried problem keeps its own)
        baseline_gpu = sum(b.get("device_s", b.get("elapsed_s")) or 0.0 for b in (baselines or {}).values()) \
            if self.config.device == "cuda" else 0.0
        if outcome.failure_kind == "lost" and row.attempts < self.settings.suite.max_attempts:
            self.ledger.update(outcome.key, state="pending", failure=outcome.failure, failure_kind="lost")
            progress.last = f"{outcome.key}: its worker was lost ({outcome.failure}); started again"
            return
        if outcome.failure_kind == "setup":
            kept = {"baselines": baselines, "gpu_s": baseline_gpu}
            self.ledger.update(outcome.key, state="pending", failure=outcome.failure, failure_kind="setup", **kept)
            self.setup_failure = _setup_error(outcome.failure or "") or "no error was printed"
            progress.gpu_s += baseline_gpu - (row.gpu_s or 0.0)
            progress.last = f"{outcome.key}: its run could not be set up ({self.setup_failure}); the suite stops"
            return
        summary = outcome.summary or {}  # as the ledger keeps it; read through ``run``
        run = outcome.run_outcome or RunOutcome()
        spend = {"gpu_s": run.gpu_seconds + baseline_gpu, "usd": run.llm_cost_usd,
                 "wall_s": (row.wall_s or 0.0) + outcome.wall_s}
        if (cut := outcome.cut_by_budget()) is not None:
            result = {**summary, "stop_reason": cut} if summary else {"stop_reason": cut}
            self.ledger.finish(outcome.key, "budget", result=result, baselines=baselines, failure=None,
                               failure_kind=None, **spend)
            progress.done += 1
            progress.last = f"{outcome.key}: cut by its budget before an improvement: keep the reference ({cut})"
        elif outcome.ok and run.status != "failed":
            self.ledger.finish(outcome.key, "done", result=summary, baselines=baselines, failure=None,
                               failure_kind=None, **spend)
            progress.done += 1
            speedup = run.best_speedup if run.improved else None
            if speedup and (progress.best is None or speedup > progress.best[1]):
                progress.best, progress.best_ci95 = (outcome.key, speedup), run.best_speedup_ci95
            progress.last = f"{outcome.key}: " + (speedup_text(speedup, run.best_speedup_ci95)
                                                  if speedup else "keep the reference")
        else:
            kind = outcome.failure_kind or "crash"
            why = outcome.failure or f"the run failed: {run.stop_reason}"
            put_back = False
            if kind == "crash" and alone.OUT_OF_GPU_MEMORY.search(why):
                put_back = row.failure_kind != alone.KIND and alone.ran_out_beside_others(why, row.lane,
                                                                                           self.backend.lanes)
                if put_back:
                    self.ledger.update(outcome.key, state="pending", baselines=baselines, failure=why,
                                       failure_kind=alone.KIND, **spend)
                    progress.last = (f"{outcome.key}: ran out of GPU memory beside the other problems on its GPU; "
                                     "it runs again alone there")
                else:
                    kind, why = alone.KIND, f"{why} (alone on its GPU)" if row.failure_kind == alone.KIND else why
            if not put_back:
                self.ledger.finish(outcome.key, "failed", result=summary or None, baselines=baselines,
                                   failure=why, failure_kind=kind, **spend)
                progress.failed += 1
                progress.last = f"{outcome.key}: failed ({kind}): {why[:200]}"
        progress.gpu_s += spend["gpu_s"] - (row.gpu_s or 0.0)  # what this attempt added to the problem's
        progress.usd += spend["usd"] - (row.usd or 0.0)

    def _eta(self) -> float | None:
        return estimate.eta_s(self.ledger.problems(), len(self.backend.lanes), self.config.totals.time_s,
                              self._active_s())

    # -- the loop ---------------------------------------------------------------------------------------------
    def run(self) -> tuple[str, str]:
        """Run every unfinished problem; returns the suite's status and why it ended."""
        rows = self.ledger.problems()
        progress = Progress(total=len(rows), done=sum(r.state == "done" for r in rows),
                            failed=sum(r.state == "failed" for r in rows), gpu_s=sum(r.gpu_s or 0 for r in rows),
                            usd=sum(r.usd or 0 for r in rows), best=best_so_far(rows))
        progress.eta_s = self._eta()  # a resumed suite's from its earlier sessions' problems
        queue = deque(r.key for r in rows if r.state in UNFINISHED)
        free = list(self.backend.lanes)
        busy: dict[str, Lane] = {}
        stop: str | None = None
        checked: set[str] = set()
        alone_lanes: set[str] = set()  # busy lanes whose problem runs alone on its GPU (``suite/alone.py``)
        unaffordable: dict[str, str] = {}  # problems left pending: what is left of the time budget cannot hold them
        self.ledger.set_suite(status="running", stop_reason="")
        try:
            while queue or busy:
                self._tick()
                rows = self.ledger.problems()
                stop = stop or budget.spent_reason(self.config.totals, self._spent(rows)) or (
                    self.setup_failure and f"a run could not be set up on this machine ({self.setup_failure}), so "
                    "every problem would fail alike: fix it, then resume")
                for key in [k for k in queue if k not in checked] if stop is None else []:
                    checked.add(key)
                    if (unusable := _unusable(self.ledger.problem(key))) is not None:  # refused, no process
                        queue.remove(key)
                        self._record(JobOutcome(key=key, ok=False, failure_kind="problem", failure=unusable),
                                     progress)
                        self.on_progress(progress)
                waiting_alone = alone.waiting(rows)
                while queue and stop is None:
                    picked = alone.pick(queue, waiting_alone.__contains__, free, busy, alone_lanes)
                    if picked is None:
                        break
                    key, lane = picked
                    queue.remove(key)
                    if (why := self._too_costly(self.ledger.problem(key), rows)) is not None:
                        unaffordable[key] = why  # stays pending: a resume with a larger budget runs it
                        self.ledger.update(key, failure=f"not started: {why}")  # what suite status shows
                        progress.last = f"{key}: not started: {why}"
                        self.on_progress(progress)
                        continue
                    free.remove(lane)
                    if key in waiting_alone:
                        alone_lanes.add(lane.name)
                    row = self.ledger.problem(key)
                    spec = self._spec(row, lane, len(queue) + 1 + len(busy), rows,
                                      [*queue, key, *progress.running.values()])
                    self.ledger.start_attempt(key, lane.name)
                    self.ledger.update(key, state="running")
                    self.backend.start(spec, lane)
                    busy[lane.name] = lane
                    progress.running[lane.name] = key
                    progress.last = f"{key}: started on {lane.name}"
                    self.on_progress(progress)
                if not busy:
                    break
                for lane_name, outcome in self.backend.wait(timeout_s=1.0):
                    free.append(busy.pop(lane_name))
                    alone_lanes.discard(lane_name)
                    progress.running.pop(lane_name, None)
                    self._record(outcome, progress)
                    if self.ledger.problem(outcome.key).state == "pending":
                        queue.appendleft(outcome.key)
                    progress.eta_s = self._eta()
                    self.after_problem()
                    self.on_progress(progress)
        finally:
            self._tick()
        if queue:
            why = stop or "no lane to run them on"
            return "stopped", f"{why}; {len(queue) + len(unaffordable)} problem(s) not started"
        if unaffordable:
            key, why = next(iter(unaffordable.items()))
            return "stopped", (f"suite time budget: {len(unaffordable)} problem(s) not started, their least work "
                               f"longer than what was left ({key}: {why}); they stay pending")
        return "completed", f"{progress.done} problem(s) done, {progress.failed} failed"


def summary(paths: SuitePaths, ledger: Ledger, status: str, stop_reason: str) -> dict[str, Any]:
    """The suite's one JSON object (``--json``'s last line)."""
    from kernelpro.suite.report_energy import suite_objective
    from kernelpro.suite.scores import suite_scores

    rows = ledger.problems()
    scores, problems = suite_scores(rows)
    suite = ledger.suite()
    config = SuiteConfig.model_validate(suite["config"])
    totals = config.totals
    lanes = len({r.lane for r in rows if r.lane}) or 1  # the lanes that have run its problems
    eta = estimate.eta_s(rows, lanes, totals.time_s, float(suite.get("active_s") or 0.0)) \
        if status == "running" else None
    audited = overnight.audit(config.overnight, float(suite.get("active_s") or 0.0), sum(r.gpu_s or 0.0 for r in rows))
    return {"suite_id": paths.suite_id, "status": status, "stop_reason": stop_reason,
            "objective": suite_objective(suite["config"], rows), "problems": len(rows),
            "finished": sum(r.finished for r in rows), "failed": sum(r.state == "failed" for r in rows),
            "degenerate": [p.key for p in problems if p.degenerate], **scores.to_dict(),
            "active_seconds": round(float(suite.get("active_s") or 0.0), 3),
            "eta_seconds": None if eta is None else round(eta, 1),
            **({"overnight": audited} if audited else {}),
            "report": str(paths.html), "report_md": str(paths.markdown), "suite_dir": str(paths.root),
            "ledger": str(paths.ledger)}
