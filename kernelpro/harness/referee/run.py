"""The referee's processes, from the judge's side, and what their report makes of the worker's verdict.

``start_referee`` starts the referee (``referee.py``: the inputs, the comparison, the verdict) and one process per
model (``referee.model_server.py``: the reference alone, the candidate alone), joined by pipes that only they hold,
each in a working directory, session and sandbox of its own; they wait for their job, which ``run_referee`` gives
them (on a GPU, the pipeline starts them while the worker judges: ``harness.referee_prestart``) and watches
under the job's time and memory limits.
``with_referee`` then decides: a worker's correct verdict stands only as the referee confirms it, and its speed
is the referee's.
"""

from __future__ import annotations

import os
import resource
import secrets
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from kernelpro.config import HarnessSettings
from kernelpro.harness import cpu_load
from kernelpro.harness.deadline import Deadline
from kernelpro.harness.referee.wire import make_arena_fd
from kernelpro.harness.result import EvalResult, GuardFinding, Timing
from kernelpro.harness.timing.scorecards import KernelBenchScore
from kernelpro.harness.timing.stats import speedup_text
from kernelpro.harness.worker.sandbox import worker_environment
from kernelpro.harness.worker.watched import ChannelReader, TailReader, end, send_job, start_module, watch


@dataclass
class RefereeOutcome:
    report: dict[str, Any] | None
    why_none: str = ""
    candidate_output: str = ""
    elapsed_s: float = 0.0
    other_cores: float | None = None
    """Cores' worth of work other than the referee's processes while they ran (``_TreesLoad``)."""


class _TreesLoad:
    """The machine's busy time less the referee's processes' own, over their life: the other work beside them,
    read from outside (what a model's process says of itself is not evidence)."""

    def __init__(self, processes: list[psutil.Process]) -> None:
        self.processes = processes
        self.first = self.last = (time.monotonic(), cpu_load._busy_seconds(), self._own())

    def _own(self) -> float:
        total = 0.0
        for proc in self.processes:
            for member in [proc, *_children(proc)]:
                try:
                    times = member.cpu_times()
                    total += times.user + times.system
                except psutil.Error:
                    pass
        return total

    def sample(self) -> None:
        self.last = (time.monotonic(), cpu_load._busy_seconds(), self._own())

    def other_cores(self) -> float | None:
        (wall0, busy0, own0), (wall, busy, own) = self.first, self.last
        if busy is None or busy0 is None or wall - wall0 <= 0.5:
            return None
        return round(max(0.0, (busy - busy0) - (own - own0)) / (wall - wall0), 3)


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


def _environment(workdir: str) -> dict[str, str]:
    env = worker_environment(workdir=workdir)
    # OpenMP's threads spin after each parallel region by default: the idle model's process then takes the cores the
    # other's call runs on (a 0.1 ms call read 6.5 ms from outside on two cores). Waiting passively costs both alike.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return env


def arena_bytes(wanted: int) -> int:
    """Each shared-memory arena's size: ``wanted``, but where an address-space limit is inherited (``ulimit -v``,
    which every process here inherits too), a sixteenth of it, so the referee's four mappings leave it room to
    run; what does not fit goes through the pipe."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard // 16)


MODELS = ("reference", "candidate")


@dataclass
class RefereeProcesses:
    """The referee and the processes serving its two models, started and joined by their pipes and arenas, waiting
    for their job on stdin (``start_referee``): a job given to ``run_referee`` or, unused, ``discard``-ed."""

    referee: subprocess.Popen
    referee_dir: str
    servers: dict[str, tuple[subprocess.Popen, str]]
    result_fd: int
    input_bytes: int
    outputs: dict[str, TailReader] = field(default_factory=dict)
    taken: bool = False

    @property
    def processes(self) -> list[subprocess.Popen]:
        return [self.referee, *(proc for proc, _ in self.servers.values())]

    @property
    def directories(self) -> list[str]:
        return [self.referee_dir, *(workdir for _, workdir in self.servers.values())]

    def discard(self) -> None:
        """Kill them unused (nothing of a job reached them); once they have served ``run_referee``, nothing."""
        if not self.taken:
            self.taken = True
            end(self.processes, list(self.outputs.values()), self.directories)
            os.close(self.result_fd)


def start_referee(settings: HarnessSettings) -> RefereeProcesses:
    """The referee's three processes, started with no job yet: they import what they need and wait for one."""
    pipes = {name: (os.pipe(), os.pipe()) for name in MODELS}  # (to it, from it)
    any_size = settings.memory_limit_mb << 20
    arena_size = arena_bytes(any_size)
    arenas = {name: (make_arena_fd(arena_size), make_arena_fd(arena_size)) for name in pipes}  # (to it, from it)
    result_r, result_w = os.pipe()
    servers = {name: start_module("kernelpro.harness.referee.model_server",
                                  (pipes[name][0][0], pipes[name][1][1], *arenas[name]), None,
                                  f"kernelpro-{name}-", _environment)
               for name in MODELS}
    ends = (result_w, *(fd for name in MODELS for fd in (pipes[name][0][1], pipes[name][1][0], *arenas[name])))
    referee, referee_dir = start_module("kernelpro.harness.referee.process", ends, None, "kernelpro-referee-",
                                        _environment)
    for (to_r, to_w), (from_r, from_w) in pipes.values():
        for fd in (to_r, to_w, from_r, from_w):
            os.close(fd)
    for fd in (result_w, *(fd for pair in arenas.values() for fd in pair)):
        os.close(fd)
    started = RefereeProcesses(referee, referee_dir, servers, result_r, any_size)
    # drained from the start: a process that fills its output pipe while it waits would block
    started.outputs = {"referee": TailReader(referee.stdout, settings.output_tail_bytes),
                       **{name: TailReader(proc.stdout, settings.output_tail_bytes)
                          for name, (proc, _) in servers.items()}}
    for reader in started.outputs.values():
        reader.start()
    return started


def run_referee(job: dict[str, Any], settings: HarnessSettings,
                started: RefereeProcesses | None = None) -> RefereeOutcome:
    """The referee's report on ``job`` (the worker's job), or why none came; by ``started`` processes
    (``start_referee``, earlier), else by processes started now."""
    began = time.monotonic()
    started = started if started is not None and not started.taken else start_referee(settings)
    started.taken = True
    nonce = secrets.token_hex(16)
    # Each model's process gets its own source only; the referee gets the reference's (its inputs), never the
    # candidate's.
    sources = {"reference": {"candidate_source": ""}, "candidate": {"reference_source": ""}}
    for name, (proc, _) in started.servers.items():
        send_job(proc, {**job, **sources[name], "serves": name, "referee_input_bytes": started.input_bytes})
    send_job(started.referee, {**job, "candidate_source": "", "nonce": nonce})
    # Three processes to start and the timing's own cap: never less than the floor a fitted job gets beyond it
    limit_s = max(settings.timeout_s, settings.timeout_floor_s + settings.timing_budget_s)
    deadline = Deadline(settings.model_copy(update={"timeout_s": limit_s}), began, until=job.get("until"))
    channel = ChannelReader(started.result_fd, nonce, deadline)
    channel.start()
    processes = started.processes
    load = _TreesLoad([psutil.Process(proc.pid) for proc in processes])
    stop = watch(processes, deadline.expired, settings.memory_limit_mb, each=load.sample)
    why = ""
    if stop is not None and stop.why == "timeout":
        why = f"timeout: no verdict from the referee {deadline.describe()}"
    elif stop is not None:
        why = f"memory_limit: a process under the referee passed the {settings.memory_limit_mb} MB limit"
    end(processes, [channel, *started.outputs.values()], started.directories)
    if channel.result is None and not why:
        tail = started.outputs["referee"].text()[-1500:]
        why = f"referee_error: the referee exited with code {started.referee.returncode} and no report: {tail}"
    return RefereeOutcome(channel.result, why, started.outputs["candidate"].text(),
                          time.monotonic() - began, load.other_cores())


def with_referee(result: EvalResult, outcome: RefereeOutcome, contention_cores: float = float("inf")) -> EvalResult:
    """The verdict once the referee has spoken: the worker's correct verdict, with the referee's speed, where it
    confirms it; otherwise what the referee found (or why it could not judge: no verdict is correct unconfirmed).
    On the CPU, the verdict is ``contended`` where other work kept ``contention_cores`` busy beside the referee's
    processes."""
    report = outcome.report
    result.elapsed_s = round((result.elapsed_s or 0.0) + outcome.elapsed_s, 3)
    if report is None:
        kind, _, message = outcome.why_none.partition(": ")
        status = "timeout" if kind == "timeout" else "runtime_error"
        return _overturned(result, status, kind, f"under the referee: {message}", outcome)
    result.details["referee"] = {k: v for k, v in report.items() if k not in ("reference", "candidate")}
    status = report.get("status")
    if status == "unavailable":  # a problem whose values cannot cross (never the candidate's doing): the worker's
        result.guards.append(GuardFinding(reason="referee_unavailable", severity="warn", source="dynamic",
                                          message=str(report.get("message", ""))))
        return result
    if status == "error":  # the referee itself, or the reference under it, failed: nothing is confirmed
        return _overturned(result, "runtime_error", "referee_error", f"the referee could not judge: "
                           f"{report.get('message', '')}", outcome)
    if status != "ok":
        return _overturned(result, str(status), str(report.get("reason") or "referee"),
                           str(report.get("message", "")), outcome)
    if "speedup" in report:
        # what the worker's own timing found goes with its figures: the referee's decide
        result.guards = [g for g in result.guards if g.reason != "below_memory_floor"]
        result.guards += [GuardFinding.model_validate(g) for g in report.get("guards", [])]
        result.details["worker_timing"] = {"speedup": result.speedup, "speedup_ci95": result.speedup_ci95,
                                           "speed_verdict": result.speed_verdict}
        result.speedup, result.speedup_ci95 = report["speedup"], report["speedup_ci95"]
        result.speed_verdict = report["speed_verdict"]
        result.kernelbench = KernelBenchScore.model_validate(report["kernelbench"]) if report.get("kernelbench") \
            else None
        result.reference = Timing.model_validate(report["reference"])
        result.candidate = Timing.model_validate(report["candidate"])
        if (result.device or "").startswith("cuda"):
            result.host_bound = result.reference.host_bound
        if result.device in (None, "cpu") and outcome.other_cores is not None:
            result.details.setdefault("cpu", {})["other_cores_beside_referee"] = outcome.other_cores
            result.contended = outcome.other_cores >= contention_cores
        result.message = (
            f"correct on {result.trials_checked} input sets and every timed call, and on the referee's "
            f"{report.get('sets_checked', 0)} of its own; {speedup_text(report['speedup'], report['speedup_ci95'])} "
            f"{report['speed_verdict']} ({result.candidate.median_ms:.4g} ms vs {result.reference.median_ms:.4g} ms, "
            f"{report['rounds']} rounds, each model in a process of its own)")
        if result.contended:
            result.message += (f"; timed while other work kept {outcome.other_cores:.1f} cores busy: not a speedup "
                               "to act on")
    else:
        result.message += f"; confirmed on the referee's {report.get('sets_checked', 0)} input sets of its own"
    return result


def _overturned(result: EvalResult, status: str, reason: str, message: str, outcome: RefereeOutcome) -> EvalResult:
    valid = {"ok", "incorrect", "compile_error", "runtime_error", "timeout", "rejected"}
    status = status if status in valid else "runtime_error"
    guards = list(result.guards)
    if status == "rejected":
        guards.append(GuardFinding(reason=reason, source="dynamic", message=message))
    overturned = EvalResult(status=status, reason=reason, message=message, correct=False, guards=guards,
                            problem_findings=result.problem_findings, device=result.device,
                            trials_checked=result.trials_checked, elapsed_s=result.elapsed_s,
                            details={**result.details, "worker_verdict": {"status": result.status,
                                                                          "speedup": result.speedup,
                                                                          "message": result.message[:500]}},
                            worker_output=(result.worker_output + outcome.candidate_output)[-8192:])
    return overturned
