"""A second opinion on a best's speedup, from the judge's side: the process started, its answer read, its limits.

Before a run reports a best, the reference and the best are timed again in a fresh process by an independent
plain method (``timing.second_opinion_worker``), and the figure compared with the judge's
(``timing.second_opinion_stats``).
The process runs candidate code, so it starts as the judge's worker does: its own directory, an environment with
no credentials (``sandbox.worker_environment``), its own session and process group, the job's protected paths and
CUDA confinement (``jobs.make_job``), the device lock held alone throughout, a wall-time and a memory limit.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from kernelpro.config import Settings
from kernelpro.harness.device_lock import device_lock
from kernelpro.harness.inline_ahead import InlineAhead
from kernelpro.harness.jobs import make_job, resolve_device
from kernelpro.harness.pipeline import lane_devices
from kernelpro.harness.result import EvalResult, SecondOpinion
from kernelpro.harness.timing.second_opinion_stats import call
from kernelpro.harness.worker.sandbox import worker_environment
from kernelpro.harness.worker.watched import ChannelReader, TailReader, end, start_module, watch
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


def run_process(job: dict[str, Any], deadline: float, memory_limit_mb: int) -> Answer:
    """Run the second opinion's process on ``job`` until it answers, ``deadline`` passes (``time.monotonic()``) or
    its processes' resident memory passes ``memory_limit_mb``; everything it started dies with it."""
    nonce = secrets.token_hex(16)
    read_fd, write_fd = os.pipe()
    proc, workdir = start_module("kernelpro.harness.timing.second_opinion_worker", (write_fd,), {**job, "nonce": nonce},
                                 "kernelpro-second-opinion-", lambda directory: worker_environment(workdir=directory))
    os.close(write_fd)
    channel, output = ChannelReader(read_fd, nonce), TailReader(proc.stdout, 4096)
    channel.start()
    output.start()
    stop = watch([proc], lambda: time.monotonic() > deadline, memory_limit_mb, done=lambda: channel.result is not None)
    answer = Answer()
    if stop is not None and stop.why == "timeout":
        answer.stopped = "no answer within its time limit"
    elif stop is not None:
        answer.stopped = f"stopped at {stop.rss_mb:.0f} MB of host memory, over the {memory_limit_mb} MB limit"
    end([proc], [channel, output], [workdir])
    answer.result, answer.phases = channel.result, channel.phases
    answer.output_tail = output.text()
    return answer
