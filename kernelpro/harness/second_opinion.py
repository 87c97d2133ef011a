"""A second opinion on a best's speedup, from the judge's side: the process started, its answer read, its limits.

Before a run reports a best, the reference and the best are timed again in a fresh process by an independent
plain method (``second_opinion_worker``), and the figure compared with the judge's (``second_opinion_stats``).
The process runs candidate code, so it starts as the judge's worker does: its own directory, an environment with
no credentials (``sandbox.worker_environment``), its own session and process group, the job's protected paths and
CUDA confinement (``jobs.make_job``), the device lock held alone throughout, a wall-time and a memory limit.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from kernelpro.config import Settings
from kernelpro.harness.device_lock import device_lock
from kernelpro.harness.inline_ahead import InlineAhead
from kernelpro.harness.jobs import make_job, resolve_device
from kernelpro.harness.pipeline import lane_devices
from kernelpro.harness.result import EvalResult, SecondOpinion
from kernelpro.harness.sandbox import json_messages, worker_environment
from kernelpro.harness.second_opinion_stats import call
from kernelpro.harness.worker_dirs import make_worker_dir
from kernelpro.problem import Problem

# Once the process reached these phases, a hang or a memory kill is the candidate's doing.
CANDIDATE_PHASES = ("load_candidate", "timing")


@dataclass
class Answer:
    """What came back from the process."""

    result: dict[str, Any] | None = None
    phases: list[str] = field(default_factory=list)
    stopped: str = ""
    """Why the judge stopped it (its time or memory limit), if it did."""
    output_tail: str = ""


def ask(problem: Problem, source: str, verdict: EvalResult, device: str, settings: Settings,
        until: float | None = None) -> SecondOpinion:
    """Time the reference and ``source`` again in a fresh process and compare with ``verdict``, the judge's word on
    it; ``until`` (a ``time.monotonic()`` instant) ends the process early, as a run's time budget does."""
    harness = settings.harness
    if not harness.second_opinion:
        return SecondOpinion(status="unavailable", message="switched off (harness.second_opinion)")
    started = time.monotonic()
    device = lane_devices(resolve_device(device), harness)[0]
    job = make_job(problem, source, device, settings)
    job["second_opinion"] = {"rounds": harness.second_opinion_rounds, "min_rounds": harness.second_opinion_min_rounds,
                             "budget_s": harness.second_opinion_budget_s, "warmup": harness.warmup}
    if (section := _inline_section(source, settings)) is not None:
        job["inline"] = section
    limit = started + harness.timeout_s + harness.second_opinion_budget_s
    with device_lock(device, harness):
        answer = run_process(job, min(limit, until) if until is not None else limit, harness.memory_limit_mb)
    elapsed = round(time.monotonic() - started, 3)
    found = answer.result or {}
    if found.get("status") == "measured":
        try:
            return call(verdict, found["reference_ns"], found["candidate_ns"], harness.second_opinion_margin,
                        str(found.get("method", "")), elapsed)
        except (KeyError, TypeError, ValueError) as exc:
            return SecondOpinion(status="unavailable", message=f"unreadable times: {exc}", elapsed_s=elapsed)
    if found.get("status") in ("failed", "unavailable"):
        return SecondOpinion(status=found["status"], message=str(found.get("message", ""))[:2000], elapsed_s=elapsed)
    phase = answer.phases[-1] if answer.phases else "start-up"
    status = "failed" if phase in CANDIDATE_PHASES else "unavailable"
    why = answer.stopped or "no answer"
    tail = answer.output_tail.strip().splitlines()[-3:]
    return SecondOpinion(status=status, message=f"{why} (during {phase})" + (f": {' '.join(tail)}" if tail else ""),
                         elapsed_s=elapsed)


def _inline_section(source: str, settings: Settings) -> dict[str, Any] | None:
    """The job's ``inline`` section for a load_inline candidate, its builds found in the judge's cache (the
    finalists' re-judgment built them); None for any other candidate, or where the cache cannot say."""
    inline = InlineAhead(settings.compile)
    try:
        plan = inline.plan(source)
        if plan is None:
            return None
        broken, section = inline.settle(plan, source)
        return None if broken is not None else section
    except Exception:  # noqa: BLE001 - the process then builds the extensions itself, as torch does
        return None
    finally:
        inline.close()


class _Tail(threading.Thread):
    """The process's output, its last ``keep`` bytes kept."""

    def __init__(self, stream: Any, keep: int = 4096) -> None:
        super().__init__(daemon=True)
        self.stream, self.keep, self.tail = stream, keep, b""

    def run(self) -> None:
        while chunk := self.stream.read1(65536):
            self.tail = (self.tail + chunk)[-self.keep:]


class _Channel(threading.Thread):
    """The JSON lines that carry the job's nonce: phases and the result."""

    def __init__(self, fd: int, nonce: str) -> None:
        super().__init__(daemon=True)
        self.file, self.nonce = os.fdopen(fd, "rb"), nonce
        self.phases: list[str] = []
        self.result: dict[str, Any] | None = None

    def run(self) -> None:
        for message in json_messages(self.file):
            if message.get("nonce") != self.nonce:
                continue
            if "phase" in message:
                self.phases.append(str(message["phase"]))
            if isinstance(message.get("result"), dict):
                self.result = message["result"]


def run_process(job: dict[str, Any], deadline: float, memory_limit_mb: int) -> Answer:
    """Run the second opinion's process on ``job`` until it answers, ``deadline`` passes (``time.monotonic()``) or
    its processes' resident memory passes ``memory_limit_mb``; everything it started dies with it."""
    nonce = secrets.token_hex(16)
    workdir = make_worker_dir("kernelpro-second-opinion-")
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelpro.harness.second_opinion_worker", str(write_fd)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=workdir,
        env=worker_environment(workdir=workdir), pass_fds=(write_fd,), start_new_session=True)
    os.close(write_fd)
    channel, output = _Channel(read_fd, nonce), _Tail(proc.stdout)
    channel.start()
    output.start()
    try:
        proc.stdin.write(json.dumps({**job, "nonce": nonce}).encode())
        proc.stdin.close()
    except BrokenPipeError:
        pass
    answer = Answer()
    watched = psutil.Process(proc.pid)
    while proc.poll() is None and channel.result is None:
        if time.monotonic() > deadline:
            answer.stopped = "no answer within its time limit"
            break
        if (rss := _tree_rss_mb(watched)) > memory_limit_mb:
            answer.stopped = f"stopped at {rss:.0f} MB of host memory, over the {memory_limit_mb} MB limit"
            break
        time.sleep(0.05)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    channel.join(timeout=5)
    output.join(timeout=5)
    shutil.rmtree(workdir, ignore_errors=True)
    answer.result, answer.phases = channel.result, channel.phases
    answer.output_tail = output.tail.decode("utf-8", errors="replace")
    return answer


def _tree_rss_mb(process: psutil.Process) -> float:
    total = 0
    for proc in [process, *process.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total / (1 << 20)
