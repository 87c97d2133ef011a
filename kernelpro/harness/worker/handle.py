"""A long-lived worker from the judge's side: start it, hand it jobs one at a time, replace it when needed.

The worker gets what a fresh worker gets (its own process group, the allow-listed environment, a resident
memory watch and a wall-time limit per job, a fresh empty working directory per job, a new nonce per job) and
is replaced (``restart_reason``) after anything that could leave its process unfit to judge the next
candidate: a CUDA error, a crash, a timeout or a memory-limit kill, a verdict that shows the candidate
tampered with process state, a reset that found something it could not undo, or ``worker_max_jobs`` jobs.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import shutil
import subprocess
import sys
import time
from typing import Any

import psutil

from kernelpro.config import HarnessSettings
from kernelpro.harness.deadline import Deadline
from kernelpro.harness.device_lock import SharedTurn
from kernelpro.harness.isolation.cuda_walls import cuda_confinement
from kernelpro.harness.worker.dirs import make_worker_dir
from kernelpro.harness.worker.sandbox import WorkerOutcome, worker_environment
from kernelpro.harness.worker.streams import Channel, JobOutput
from kernelpro.harness.worker.watched import kill_group, tree_rss_mb

# Guard findings that mean the candidate changed the process itself, not only its own answers.
TAMPERING = {"judge_patch", "timer_patch", "background_thread", "background_process", "extra_stream",
             "tensor_subclass", "l2_persistence"}
# Verdict reasons after which the process cannot be trusted (an illegal address poisons the CUDA context).
STICKY = {"cuda_error", "worker_error", "memory_limit"}
ACCEPT_TIMEOUT_S = 30.0  # a healthy worker acknowledges a job within milliseconds
OUTPUT_GRACE_S = 5.0
# Starting (torch's import, the walls, the warm-up) takes 1-10 s, more on a loaded host: never less than this,
# whatever a candidate's own ``timeout_s``.
START_TIMEOUT_S = 60.0


class WorkerStartError(RuntimeError):
    """The worker did not come up; the message carries what it printed."""


def restart_reason(outcome: WorkerOutcome) -> str | None:
    """Why the worker must not judge another candidate after this outcome, or None."""
    if outcome.result is None:
        return "the worker died or was stopped"
    result = outcome.result
    if result.get("reason") in STICKY:
        return f"the verdict was {result['reason']}"
    tampered = sorted({g["reason"] for g in result.get("guards", [])
                       if g.get("severity") == "reject" and g.get("source") == "dynamic" and g["reason"] in TAMPERING})
    return f"the candidate tampered with the process ({', '.join(tampered)})" if tampered else None


class LongLivedWorker:
    """One worker process on one device, judging jobs one at a time; restarted transparently."""

    def __init__(self, device: str, settings: HarnessSettings, protected_paths: list[str] | None = None) -> None:
        self.device, self.settings = device, settings
        self.protected_paths = protected_paths
        self.proc: subprocess.Popen | None = None
        self.jobs_done = 0
        self.starts = 0
        self.restarts: list[str] = []
        self.last_returncode: int | None = None

    # -- life cycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self.home = make_worker_dir("kernelpro-gpu-worker-")
        result_read, result_write = os.pipe()
        job_read, job_write = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelpro.harness.worker.persistent", str(result_write), str(job_read)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=self.home,
            env=worker_environment(workdir=self.home), pass_fds=(result_write, job_read), start_new_session=True,
        )
        os.close(result_write)
        os.close(job_read)
        self.jobs = os.fdopen(job_write, "wb")
        self.channel = Channel(result_read)
        self.output = JobOutput(self.proc.stdout, self.settings.output_tail_bytes)
        self.channel.start()
        self.output.start()
        self.starts += 1
        self.jobs_done = 0
        nonce = secrets.token_hex(16)
        self.output.begin(nonce)
        setup = {"nonce": nonce, "device": self.device, "harness": self.settings.model_dump(mode="json"),
                 "protected_paths": self.protected_paths,
                 **cuda_confinement(self.device, self.settings, self.protected_paths or [])}
        if not self._send(setup) or self._wait_ready(nonce, max(self.settings.timeout_s, START_TIMEOUT_S)) is None:
            self.stop()
            self.output.join(timeout=OUTPUT_GRACE_S)
            raise WorkerStartError(f"the worker on {self.device} did not start:\n"
                                   + self.output.tail.decode("utf-8", errors="replace")[-4000:])

    def stop(self) -> None:
        if self.proc is None:
            return
        kill_group(self.proc)
        self.last_returncode = self.proc.wait()
        # ``jobs`` is missing when a close stops a worker that another thread is still starting
        for stream in (getattr(self, "jobs", None), self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        shutil.rmtree(self.home, ignore_errors=True)
        self.proc = None

    def restart_later(self, reason: str) -> None:
        """Stop now; the next job starts a new worker."""
        self.restarts.append(reason)
        self.stop()

    # -- jobs -------------------------------------------------------------------------------------
    def run(self, job: dict[str, Any], turn: SharedTurn | None = None) -> WorkerOutcome:
        """Judge one job. Raises ``WorkerStartError`` only when no worker can be started at all. ``turn``: the
        device lock the job holds shared until timing, changed as the job asks (``device_turns``); the seconds
        spent waiting for it count neither against the job's time limit nor in its elapsed."""
        turn = turn if turn is not None else SharedTurn(None)  # held alone throughout: a turn that locks nothing
        for _attempt in range(2):
            if self.proc is None:
                self.start()
            outcome = self._run_once(job, turn)
            if outcome is not None:
                return outcome
            self.restart_later("the worker did not accept a job")
        raise WorkerStartError(f"the worker on {self.device} does not accept jobs")

    def _send(self, message: dict[str, Any]) -> bool:
        try:
            self.jobs.write(json.dumps(message).encode() + b"\n")
            self.jobs.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def _messages(self, nonce: str, timeout: float) -> list[dict[str, Any]]:
        """This job's messages that arrived within ``timeout`` (an empty dict marks a closed channel)."""
        found: list[dict[str, Any]] = []
        try:
            message = self.channel.messages.get(timeout=timeout)
            while True:
                if message is None:
                    found.append({})
                elif message.get("nonce") == nonce:
                    found.append(message)
                message = self.channel.messages.get_nowait()
        except queue.Empty:
            return found

    def _wait_ready(self, nonce: str, timeout: float) -> list[str] | None:
        """The problems the worker reported with ``ready``, or None if it never said it was ready."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message in self._messages(nonce, 0.05):
                if not message:
                    return None
                if message.get("ready"):
                    return [str(p) for p in message.get("problems", [])]
            if self.proc.poll() is not None and self.channel.messages.empty():
                return None
        return None

    def _run_once(self, job: dict[str, Any], turn: SharedTurn) -> WorkerOutcome | None:
        """One attempt; None when the worker never acknowledged the job (it was broken before the job began)."""
        nonce = secrets.token_hex(16)
        workdir = make_worker_dir("kernelpro-worker-", self.home)  # inside the worker's own, its only writable one
        self.output.begin(nonce)
        started = time.monotonic()
        outcome = WorkerOutcome(returncode=None, result=None)
        try:
            if not self._send({**job, "nonce": nonce, "workdir": workdir}):
                return None
            accepted = self._watch(nonce, outcome, started, turn, job.get("until"))
            if not accepted:
                return None
            outcome.elapsed_s = time.monotonic() - started - outcome.turn_waited_s
            self.jobs_done += 1
            # A job that died in a fork of the worker (CPU) left the worker itself untouched.
            reason = None if outcome.returncode is not None else restart_reason(outcome)
            if reason is None:
                problems = self._wait_ready(nonce, self.settings.worker_reset_timeout_s)
                if problems is None:
                    reason = "the worker did not finish its reset in time"
                elif problems:
                    reason = "; ".join(problems)
                elif 0 < self.settings.worker_max_jobs <= self.jobs_done:
                    reason = f"recycled after {self.jobs_done} jobs"
            if reason is not None:
                self.restart_later(reason)
                outcome.returncode = self.last_returncode
            self.output.ended.wait(OUTPUT_GRACE_S)
            with self.output.lock:
                outcome.output_tail = self.output.tail.decode("utf-8", errors="replace")
                outcome.output_bytes = self.output.total
            return outcome
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _change_turn(self, asked: Any, outcome: WorkerOutcome, deadline: Deadline, turn: SharedTurn) -> None:
        """The job's hold on the device changed as it asks (``device_turns``); a request that waits is answered
        ``{"go": true}`` once granted. The device alone to time comes once a job; alone for a benchmark only
        before that; shared again only after the job let it go or benchmarked: any other request gets nothing
        (the job's own code sent one of them, and waits on for its answer)."""
        if asked == "none":
            turn.let_go()
            return
        if asked == "shared" and (turn.released or turn.benchmarking):
            waited = turn.take_shared()
        elif asked == "benchmark" and turn.may_benchmark:
            waited = turn.take_alone_to_benchmark()
        elif asked == "exclusive" and not turn.exclusive:
            waited = turn.take_exclusive()
        else:
            return
        outcome.turn_waited_s += waited
        deadline.pause(waited)
        self._send({"go": True})

    def _watch(self, nonce: str, outcome: WorkerOutcome, started: float, turn: SharedTurn,
               until: float | None = None) -> bool:
        """Wait for the result within the limits (and the caller's ``until``). False if the worker never
        acknowledged the job."""
        accepted = False
        deadline = Deadline(self.settings, started, until)
        watched = psutil.Process(self.proc.pid)
        while outcome.result is None:
            for message in self._messages(nonce, 0.05):
                if not message:
                    break
                accepted = True
                deadline.observe(message)
                if "phase" in message:
                    outcome.phases.append(str(message["phase"]))
                if "turn" in message:
                    self._change_turn(message["turn"], outcome, deadline, turn)
                if "result" in message:
                    outcome.result = message["result"]
                if "exited" in message:
                    outcome.returncode = int(message["exited"])
            if outcome.result is not None or outcome.returncode is not None:
                break
            elapsed = time.monotonic() - started
            if self.proc.poll() is not None:
                # Dead: once its group is gone the channel reaches its end; read what it said before dying.
                kill_group(self.proc)
                self.channel.join(timeout=OUTPUT_GRACE_S)
                for message in self._messages(nonce, 0):
                    accepted = accepted or bool(message)
                    outcome.phases += [str(message["phase"])] if "phase" in message else []
                    outcome.result = message.get("result", outcome.result)
                break
            if not accepted and elapsed > ACCEPT_TIMEOUT_S:
                return False
            if deadline.expired():
                outcome.timed_out, outcome.time_limit = True, deadline.describe()
                outcome.cut_by_caller = deadline.by_caller()
                break
            rss = tree_rss_mb(watched)
            if rss > self.settings.memory_limit_mb:
                outcome.memory_exceeded_mb = rss
                break
        return accepted
