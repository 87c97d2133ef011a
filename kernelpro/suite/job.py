"""One problem of a suite, run to its end in a child process: its optimisation, which judges its baselines first.

The optimisation is ``kernelpro optimize`` itself (the same composition root, graph, policies and judge) under
the run id the ledger chose, so a job started again after a kill resumes that run from its checkpoint
(``--resume``) and judges nothing twice. The run is asked as a ``RunSpec`` (``runs/spec.py``), which writes the
child's command line, and its ``RunOutcome`` (``runs/outcome.py``) is read from the child's last line. The run
judges the problem's compile baselines before its search, with its own worker (``--baselines``): a recipe that is
a baseline's very code, ``torch.compile`` of the reference, is answered from its verdict rather than judged again.
The child gets its lane's GPU alone (``CUDA_VISIBLE_DEVICES``), dies with the process that started it
(``orphan_guard``) and is killed, with its process group, when it overruns the problem's time limit. Under a suite
time budget it also has a deadline (``suite/estimate.py``): there it is stopped as a user stops a run (SIGINT: the
run keeps every verdict it took, cuts the judgment in flight without a verdict and stays resumable), and killed if
it has not ended by the kill time. A job resuming a run first waits for the run's driver lock, which a lost
attempt's dying process may hold for a moment. Whatever happens comes back as a ``JobOutcome``; a job never raises
for its problem.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from kernelpro.exit_codes import BAD_INPUT, FAILED, NO_IMPROVEMENT, OK, SETUP_FAILED
from kernelpro.run_lock import RunBusy, RunLock
from kernelpro.runs.outcome import RunOutcome
from kernelpro.runs.spec import Budgets, RunSpec
from kernelpro.suite.budget import Limits

FailureKind = Literal["problem", "crash", "hang", "lost", "setup", "gpu_memory"]
RUN_LOCK_WAIT_S = 60.0  # a lost attempt's process lets its run go within seconds of its actor's end


class JobSpec(BaseModel):
    """Everything a lane (or a Ray actor) needs to run one problem: plain data."""

    key: str
    path: str
    run_id: str
    runs_dir: str
    log_dir: str
    device: str
    max_iters: int
    budgets: Limits = Field(default_factory=Limits)
    baselines: list[str] = Field(default_factory=list)
    """Compile baselines still to measure (none when they are in the ledger already, or eager only)."""
    policy: str | None = None
    objective: str | None = None
    model: str | None = None
    no_memory: bool = False
    no_profile: bool = False
    timeout_s: float = 4 * 3600.0
    stop_after_s: float | None = None
    """The deadline: seconds after its start at which the run is stopped cleanly (the suite's time budget)."""
    kill_after_s: float | None = None
    """Seconds after its start at which a run stopped at its deadline and still running is killed."""
    more_budget: bool = False
    """A run a budget cut, retried (``--retry budget``): resumed, it goes on with ``budgets`` added to its own."""
    env: dict[str, str] = Field(default_factory=dict)
    """The lane's environment on top of the driver's (its GPU)."""


class JobOutcome(BaseModel):
    key: str
    ok: bool
    summary: dict[str, Any] | None = None
    """``kernelpro optimize --json``'s object, as the ledger keeps it (``run_outcome`` reads it)."""
    baselines: dict[str, Any] | None = None
    failure_kind: FailureKind | None = None
    failure: str = ""
    wall_s: float = 0.0
    budget_stop: str = ""
    """Why its deadline stopped it (the suite's time budget), or "" when it ended by itself."""

    @property
    def run_outcome(self) -> RunOutcome | None:
        """The run's outcome (``summary``), typed; None when the run printed none."""
        return RunOutcome.of(self.summary)

    def cut_by_budget(self) -> str | None:
        """Why a budget cut the problem's run before it found an improvement (it keeps the reference), or None:
        its deadline stopped it, or its run stopped at a budget (a suite's run is never stopped by a user)."""
        outcome = self.run_outcome or RunOutcome()
        if outcome.improved or outcome.status == "failed":
            return None
        if self.budget_stop:
            return self.budget_stop
        if self.ok and outcome.status == "stopped":
            return outcome.stop_reason or "stopped by its budget"
        return None


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kernelpro.suite.orphan_guard", str(os.getpid()), sys.executable, "-m",
            "kernelpro.cli", *args]


def run_spec(spec: JobSpec) -> RunSpec:
    """The run a job drives, as the ledger asks it: its problem, its id, the suite's choices, its share of the
    budgets (a share left near 0 still above 0: at least a second, a micro-dollar)."""
    limits = spec.budgets
    return RunSpec(problem_path=Path(spec.path), runs_dir=Path(spec.runs_dir), run_id=spec.run_id, device=spec.device,
                   budgets=Budgets(max_iters=spec.max_iters, time_s=_floor(limits.time_s, 1.0),
                                   gpu_s=_floor(limits.gpu_s, 1.0), usd=_floor(limits.usd, 1e-6)),
                   policy=spec.policy, objective=spec.objective, model=spec.model, no_memory=spec.no_memory,
                   no_profile=spec.no_profile, baselines=spec.baselines)


def _floor(value: float | None, least: float) -> float | None:
    return None if value is None else max(value, least)


def optimize_command(spec: JobSpec) -> list[str]:
    """A fresh run under the ledger's run id, or ``--resume`` when that run already has its directory; either
    judges the compile baselines the ledger lacks first (``--baselines``)."""
    run = run_spec(spec)
    meta_path = Path(spec.runs_dir) / spec.run_id / "run.json"
    if meta_path.exists():
        if spec.more_budget:
            run.budgets = run.budgets.model_copy(update=_added_budgets(spec, meta_path))
        return _cli("optimize", *run.resume_args(with_budgets=spec.more_budget, as_json=True))
    return _cli("optimize", *run.optimize_args(as_json=True))


def _added_budgets(spec: JobSpec, meta_path: Path) -> dict[str, float]:
    """The budgets a retried run goes on under: its own (what it spent, across resumes) plus its new share."""
    try:
        own = json.loads(meta_path.read_text()).get("budgets") or {}
    except (OSError, ValueError):
        own = {}
    return {name: (own.get(name) or 0.0) + share for name in ("time_s", "gpu_s", "usd")
            if (share := getattr(spec.budgets, name)) is not None}


def _safe(key: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in key)


def _run(command: list[str], spec: JobSpec, stage: str, timeout_s: float) -> tuple[int | None, str, str, bool]:
    """(exit code or None when killed for overrunning, the last stdout line, the stderr's tail, whether its
    deadline stopped it)."""
    log_dir = Path(spec.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / f"{_safe(spec.key)}.{stage}.out", log_dir / f"{_safe(spec.key)}.{stage}.log"
    # The suite's own directory (its ledger, every run) is out of the reach of any candidate these runs judge.
    env = {**os.environ, **spec.env,
           "KERNELPRO_HARNESS__PROTECTED_DIRS": json.dumps([str(Path(spec.runs_dir).resolve().parent)])}
    with out_path.open("w") as out, err_path.open("a") as err:
        err.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {' '.join(command[4:])}\n")
        err.flush()
        started = time.monotonic()
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, start_new_session=True)
        stop_s = spec.stop_after_s if spec.stop_after_s is not None and spec.stop_after_s < timeout_s else None
        stopped = False
        try:
            code: int | None = proc.wait(timeout=timeout_s if stop_s is None else stop_s)
        except subprocess.TimeoutExpired:
            code = None
            if stop_s is not None:  # its deadline, not a hang: the run's own stop, as Ctrl-C
                stopped = True
                proc.send_signal(signal.SIGINT)
                kill_s = min(timeout_s, spec.kill_after_s if spec.kill_after_s is not None else timeout_s)
                try:
                    code = proc.wait(timeout=max(0.0, kill_s - (time.monotonic() - started)))
                except subprocess.TimeoutExpired:
                    code = None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    lines = out_path.read_text(errors="replace").strip().splitlines()
    tail = err_path.read_text(errors="replace")[-4000:]
    return code, lines[-1] if lines else "", tail, stopped


def _error_line(tail: str) -> str:
    """The child's one error line (``error: ...``), else its last non-empty lines."""
    lines = [line.strip() for line in tail.splitlines() if line.strip() and not line.startswith("--- ")]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors[-1] if errors else " | ".join(lines[-3:]))[:1000] or "no output"


def _summary(last: str) -> dict[str, Any] | None:
    """optimize's ``--json`` object (its ``RunOutcome``), its last stdout line; None when it printed none."""
    outcome = RunOutcome.from_line(last)
    return outcome.to_json() if outcome is not None else None


def _parse(code: int | None, last: str, tail: str, timeout_s: float, stage: str
           ) -> tuple[dict[str, Any] | None, FailureKind | None, str]:
    if code is None:
        return None, "hang", f"{stage} ran past the limit of {timeout_s:.0f} s and was killed"
    if code == -signal.SIGKILL:  # not by this job (its own kill is the limit's, above): the problem is not at fault
        return None, "lost", (f"{stage} was killed from outside (SIGKILL: the kernel's out-of-memory killer, a "
                              "person, or the Ray actor running it going away)")
    if code == BAD_INPUT:
        return None, "problem", _error_line(tail)
    if code == SETUP_FAILED:  # the machine, not the problem: the driver stops the suite
        return None, "setup", _error_line(tail)
    data = _summary(last)
    # optimize's summary comes with 0 (improved), 3 (keep the reference) or 4 (the run failed, said in it)
    if code not in (OK, NO_IMPROVEMENT, FAILED) or data is None:
        return None, "crash", f"{stage} exited with {code}: {_error_line(tail)}"
    return data, None, ""


def wait_for_run_lock(run_dir: Path, limit_s: float = RUN_LOCK_WAIT_S, poll_s: float = 0.2) -> bool:
    """Wait, up to ``limit_s``, until no process holds the run's driver lock (``run_lock``); whether it is free.

    A problem started again after its worker was lost may find its run still held by the previous attempt's
    ``optimize``: a Ray actor is reported gone before its process, and the child that dies with it, have exited.
    Resumed at once, the run would be refused as busy and the problem recorded failed for nothing."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            RunLock.acquire(run_dir, "the run").release()
            return True
        except RunBusy:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)


def run_job(spec: JobSpec) -> JobOutcome:
    """The problem's optimisation, its missing baselines judged first; never raises for the problem."""
    from kernelpro.runs.files import RunFiles

    start = time.monotonic()
    run_dir = Path(spec.runs_dir) / spec.run_id
    command = optimize_command(spec)
    if "--resume" in command:
        wait_for_run_lock(run_dir)  # still held past the wait: the resume says by whom, and the problem fails
    code, last, tail, stopped = _run(command, spec, "optimize", spec.timeout_s)
    if stopped:  # whatever it exited with: the run stopped (or was killed) at its deadline, resumable
        summary, kind, why = _summary(last), None, ""
        budget_stop = (f"stopped at its deadline, {spec.stop_after_s:.0f} s after it started (the suite's time "
                       "budget)" + ("" if code is not None else "; killed when it did not end in time"))
    else:
        summary, kind, why = _parse(code, last, tail, spec.timeout_s, "the optimisation")
        budget_stop = ""
    baselines: dict[str, Any] | None = None
    if spec.baselines and kind != "problem":
        # judged by the run (one that ended early left them in its directory); a run that died before judging
        # them leaves none, and the problem's next attempt judges them
        outcome = RunOutcome.of(summary)
        baselines = (outcome.baselines if outcome is not None else None) or RunFiles(run_dir).baselines()
    return JobOutcome(key=spec.key, ok=kind is None, summary=summary, baselines=baselines, failure_kind=kind,
                      failure=why, wall_s=time.monotonic() - start, budget_stop=budget_stop)
