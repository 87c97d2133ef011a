"""The judging pipeline: static checks, compiles in a CPU pool ahead of the GPU queue, one worker per device.

A producer thread compiles the candidates' literal CUDA kernels in chunks (``compile_ahead``), starts their
``load_inline`` builds in a pool of their own (``inline_ahead``), and queues each candidate as soon as its
kernels and extensions are built; one that does not compile is a verdict without a worker. One
lane per device drains the queue: with ``harness.worker_mode = "persistent"`` through a long-lived worker
(``worker.handle``), with ``"fresh"`` through a new worker process per candidate (``sandbox``). Verdicts
come back in input order, and a candidate that crashes, hangs or cheats never takes a later one down.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import wait
from dataclasses import dataclass, field
from typing import Any

from kernelpro.config import HarnessSettings, Settings
from kernelpro.harness.compile_ahead import compile_ahead
from kernelpro.harness.device_lock import device_lock, locks, shared_until_exclusive
from kernelpro.harness.inline_ahead import InlineAhead, InlineCounts, InlinePlan
from kernelpro.harness.isolation.walls import hide_this_process
from kernelpro.harness.jobs import classify, make_job, precheck, protected_paths, resolve_device
from kernelpro.harness.referee.run import RefereeProcesses, run_referee, start_referee, with_referee
from kernelpro.harness.result import CUT_AT_DEADLINE, EvalResult, GuardFinding
from kernelpro.harness.worker.handle import LongLivedWorker, WorkerStartError
from kernelpro.harness.worker.sandbox import run_worker
from kernelpro.problem import Problem

Item = tuple[Problem, str]


class JudgingStopped(RuntimeError):
    """The pipeline was closed while it judged (the run stopping: the user's interrupt, or its own shutdown). What
    a stopped worker gives back is the stop's doing, not the candidate's: the candidates it cut have no verdict, are
    never handed to ``on_verdict``, and are judged afresh by whoever judges them next."""


def lane_devices(device: str, harness: HarnessSettings) -> list[str]:
    """The devices to judge on: ``cpu``, one named GPU, or every GPU ``harness.gpu_devices`` allows."""
    if not device.startswith("cuda") or ":" in device:
        return [device]
    import torch

    visible = torch.cuda.device_count()
    indices = list(range(visible)) if harness.gpu_devices is None else list(harness.gpu_devices)
    if bad := [i for i in indices if not 0 <= i < max(visible, 1)]:
        raise ValueError(f"harness.gpu_devices names GPU(s) {bad}, but {visible} GPU(s) are visible")
    if len(indices) <= 1:
        return ["cuda" if not indices or indices[0] == 0 else f"cuda:{indices[0]}"]
    return [f"cuda:{i}" for i in indices]


@dataclass
class PipelineStats:
    """What the pipeline did: candidates judged in workers, worker starts, why workers were replaced, and the
    ``load_inline`` builds of its pool (``inline_pool_width`` 0: it never started), and the time its lanes waited
    for the device lock (``device_lock``) while other processes judged on their devices."""

    judged: int = 0
    worker_starts: int = 0
    restarts: list[str] = field(default_factory=list)
    inline: InlineCounts = field(default_factory=InlineCounts)
    inline_pool_width: int = 0
    device_lock_wait_s: float = 0.0


class Lane:
    """One device's worker: long-lived, or a fresh process per candidate."""

    def __init__(self, device: str, settings: Settings) -> None:
        self.device, self.settings = device, settings
        persistent = settings.harness.worker_mode == "persistent"
        self.worker = LongLivedWorker(device, settings.harness, protected_paths(settings)) if persistent else None
        self.judged = 0
        self.lock_wait_s = 0.0  # waited for the device lock while another process judged on this device
        self.closed = threading.Event()  # set before the worker is stopped: what comes back after is no verdict

    def judge(self, problem: Problem, source: str, found: list[GuardFinding], timing: bool,
              inline: dict[str, Any] | None = None, until: float | None = None) -> EvalResult:
        """The candidate's verdict; ``JudgingStopped`` when the lane was closed before or while judging it."""
        if self.closed.is_set():
            raise JudgingStopped(f"the judge on {self.device} was closed before this candidate")
        try:
            result = self._judge(problem, source, found, timing, inline, until)
        except Exception as error:
            if self.closed.is_set():  # e.g. the worker's pipes gone under a job it was watching
                raise self._stopped() from error
            raise
        if self.closed.is_set():  # e.g. "the worker died from SIGKILL": the kill was the close's
            raise self._stopped()
        return result

    def _stopped(self) -> JudgingStopped:
        if self.worker is not None:  # one the lane started while the close stopped the last
            with contextlib.suppress(Exception):
                self.worker.stop()
        return JudgingStopped(f"the judge on {self.device} was closed while it judged this candidate")

    def _judge(self, problem: Problem, source: str, found: list[GuardFinding], timing: bool,
               inline: dict[str, Any] | None, until: float | None = None) -> EvalResult:
        job = make_job(problem, source, self.device, self.settings, timing)
        if timing and self.settings.harness.referee:
            # the referee times both models for the verdict: the worker's own look is its shortest
            job["worker_harness"] = {"timing_trials": self.settings.harness.min_timing_trials}
        if inline is not None:
            job["inline"] = inline
        if until is not None:
            job["until"] = until  # the caller's end: the job stops there (``Deadline``)
        prestarted = self.prestart_referee(timing)
        try:
            if self.worker is not None and self.worker.proc is None:
                self.worker.start()  # outside the device lock: a start measures nothing
            if timing and self.shares_until_timing():
                result = self.run_shared_until_timing({**job, "share_until_timing": True}, prestarted)
            else:
                result = self.run(job, prestarted)
        except WorkerStartError as exc:
            return EvalResult(status="runtime_error", reason="worker_error", message=str(exc), guards=found)
        finally:
            if prestarted is not None:
                prestarted.discard()  # unused (the verdict was not correct); once used, nothing is left
        return self.verdict(result, found)

    def prestart_referee(self, timing: bool) -> RefereeProcesses | None:
        """The referee's processes started now, outside the device lock, for a timed job on a GPU
        (``harness.referee_prestart``)."""
        harness = self.settings.harness
        if not (timing and harness.referee and harness.referee_prestart and self.device.startswith("cuda")):
            return None
        return start_referee(harness)

    def shares_until_timing(self) -> bool:
        """``harness.share_until_timing``, where it applies: a long-lived worker (whose protocol carries the turn)
        on a locked device (where lanes wait for each other)."""
        harness = self.settings.harness
        return harness.share_until_timing and self.worker is not None and locks(self.device, harness)

    def run(self, job: dict[str, Any], prestarted: RefereeProcesses | None = None) -> EvalResult:
        """One job in the worker, the device lock held alone throughout."""
        with device_lock(self.device, self.settings.harness) as waited:
            outcome = self.worker.run(job) if self.worker else run_worker(job, self.settings.harness)
            result = self.refereed(job, classify(outcome, self.settings), prestarted)
        self.lock_wait_s += waited
        return result

    def refereed(self, job: dict[str, Any], result: EvalResult,
                 prestarted: RefereeProcesses | None = None) -> EvalResult:
        """A correct verdict confirmed, and its speed measured, on the trusted side (``harness.referee``), by the
        ``prestarted`` processes where there are some; called with the device held alone."""
        if not self.settings.harness.referee or result.status != "ok":
            return result
        harness = self.settings.harness
        return with_referee(result, run_referee(job, harness, prestarted), harness.cpu_contention_cores)

    def run_shared_until_timing(self, job: dict[str, Any], prestarted: RefereeProcesses | None = None) -> EvalResult:
        """One job with the device lock held shared until the job asks for it alone, to time."""
        with shared_until_exclusive(self.device, self.settings.harness) as turn:
            outcome = self.worker.run(job, turn)
        self.lock_wait_s += turn.waited_s
        result = classify(outcome, self.settings)
        # waited_to_start, shared, released (compiling), waited_shared (to take it back), waited_benchmark and
        # benchmarking (alone for autotuning's benchmarks), waited_alone, alone
        result.details["device_turn"] = {**{f"{state}_s": round(seconds, 3) for state, seconds in turn.spans.items()},
                                         "taken_back": turn.taken_back, "benchmarks": turn.benchmarks}
        if result.status == "ok" and result.speedup is not None and not turn.exclusive:
            # the judge's own code asks before timing: a timed verdict without the turn came from elsewhere
            return EvalResult(status="runtime_error", reason="worker_error", device=result.device,
                              message="the job timed without holding the device alone; the verdict is void")
        if result.out_of_gpu_memory:
            # other lanes' jobs held memory beside it: judged again, the device held alone from the start
            again = self.run({k: v for k, v in job.items() if k != "share_until_timing"}, prestarted)
            again.details["judged_alone_after"] = result.message[:300]
            again.elapsed_s = round((again.elapsed_s or 0.0) + (result.elapsed_s or 0.0), 3)
            return again
        if self.settings.harness.referee and result.status == "ok":
            with device_lock(self.device, self.settings.harness) as waited:
                result = self.refereed(job, result, prestarted)
            self.lock_wait_s += waited
        return result

    def verdict(self, result: EvalResult, found: list[GuardFinding]) -> EvalResult:
        self.judged += 1
        result.guards = [*found, *[g for g in result.guards if g not in found]]
        return result

    def close(self) -> None:
        self.closed.set()
        if self.worker is not None:
            self.worker.stop()


class Pipeline:
    """Judges batches of (problem, candidate source) on every lane of ``device``; reusable across batches."""

    def __init__(self, device: str, settings: Settings) -> None:
        self.settings = settings
        if settings.harness.isolate:
            hide_this_process()  # the judge's environment may hold credentials; its workers must not read it
        self.device = resolve_device(device if device != "auto" else settings.device)
        self.lanes = [Lane(d, settings) for d in lane_devices(self.device, settings.harness)]
        self.inline = InlineAhead(settings.compile)
        self.inline_sections: dict[int, dict[str, Any]] = {}
        self.stopped = threading.Event()  # closed: a batch in flight has no verdicts past this point

    def __enter__(self) -> Pipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.stopped.set()  # first: a verdict reached from here on may be the close's doing
        for lane in self.lanes:
            lane.close()
        self.inline.close()

    @property
    def stats(self) -> PipelineStats:
        workers = [lane.worker for lane in self.lanes if lane.worker is not None]
        return PipelineStats(judged=sum(lane.judged for lane in self.lanes),
                             worker_starts=sum(w.starts for w in workers),
                             restarts=[reason for w in workers for reason in w.restarts],
                             inline=self.inline.counts, inline_pool_width=self.inline.width,
                             device_lock_wait_s=sum(lane.lock_wait_s for lane in self.lanes))

    def judge(self, items: list[Item], timing: bool = True,
              on_verdict: Callable[[int, EvalResult], None] | None = None,
              until: float | None = None) -> list[EvalResult]:
        """Verdicts for ``items`` in order. Never raises for a bad candidate. ``on_verdict(index, result)`` is
        called as each verdict is reached (from the lanes' threads), so a caller killed mid-batch can keep the
        verdicts it already had. ``until`` (a ``time.monotonic()`` instant, a run's time budget): no job starts
        after it and a job in flight stops there; either comes back with the reason ``CUT_AT_DEADLINE``, no verdict
        on its candidate. Raises ``JudgingStopped`` when the pipeline is closed before the batch ends: the
        candidates it had not reached then are never handed to ``on_verdict``."""
        if self.stopped.is_set():
            raise JudgingStopped("the judge was closed before this batch")
        device = self.lanes[0].device if len(self.lanes) == 1 else self.device
        results = _Verdicts(len(items), device, on_verdict, self.stopped)
        checked = [precheck(source) for _, source in items]
        for index, found in enumerate(checked):
            if isinstance(found, EvalResult):
                results[index] = found
        runnable = [i for i, found in enumerate(checked) if not isinstance(found, EvalResult)]
        work: queue.Queue[int | None] = queue.Queue()
        self._planned, self._building = threading.Event(), False
        producer = threading.Thread(target=self._compile, args=(items, runnable, checked, results, work), daemon=True)
        lanes = [threading.Thread(target=self._drain, args=(lane, work, items, checked, results, timing, until),
                                  daemon=True) for lane in self.lanes]
        for thread in [producer, *lanes]:
            thread.start()
        for thread in [producer, *lanes]:
            thread.join()
        if self.stopped.is_set():
            raise JudgingStopped("the judge was closed before this batch's verdicts were all reached")
        for index, result in enumerate(results):
            if result is None:  # only if a lane thread itself failed
                results[index] = EvalResult(status="runtime_error", reason="worker_error",
                                            message="the judging pipeline lost this candidate")
        return list(results)

    def _compile(self, items: list[Item], runnable: list[int], checked: list, results: list,
                 work: queue.Queue) -> None:
        """Start every candidate's load_inline builds in their pool, compile CudaKernels ahead in chunks the size
        of the compile pool, and queue each candidate once all its builds are done."""
        self.inline_sections = {}
        plans: dict[int, InlinePlan] = {}
        chunk = max(1, self.settings.compile.workers or os.cpu_count() or 1)
        try:
            for index in runnable:
                try:
                    plan = self.inline.plan(items[index][1])
                except Exception:  # noqa: BLE001 - the worker then builds the extensions itself
                    plan = None
                if plan is not None:
                    plans[index] = plan
            self._building = any(plan.futures for plan in plans.values())
            self._planned.set()
            for start in range(0, len(runnable), chunk):
                indices = runnable[start:start + chunk]
                try:
                    compiled = compile_ahead([items[i][1] for i in indices], self.settings.compile)
                except Exception:  # noqa: BLE001 - the worker then compiles the kernels itself
                    compiled = [[] for _ in indices]
                for index, kernels in zip(indices, compiled, strict=True):
                    broken = next((r for r in kernels if r.failure == "compile"), None)
                    if broken is not None:
                        plans.pop(index, None)
                        results[index] = EvalResult(
                            status="compile_error", reason="kernel_compile_error", guards=checked[index],
                            message=f"a CudaKernel does not compile ({broken.backend}):\n{broken.message}")
                    elif index in plans and plans[index].futures:
                        continue  # queued once its extensions are built
                    else:
                        self._queue_inline(index, plans.pop(index, None), items, checked, results, work)
            while plans:  # in the order their builds finish, so the GPU never waits on a slower one
                if pending := [f for plan in plans.values() for f in plan.futures if not f.done()]:
                    wait(pending, return_when="FIRST_COMPLETED")
                for index in [i for i, plan in plans.items() if all(f.done() for f in plan.futures)]:
                    self._queue_inline(index, plans.pop(index), items, checked, results, work)
        finally:
            self._planned.set()
            for _ in self.lanes:
                work.put(None)

    def _queue_inline(self, index: int, plan: InlinePlan | None, items: list[Item], checked: list, results: list,
                      work: queue.Queue) -> None:
        if plan is not None:
            try:
                broken, section = self.inline.settle(plan, items[index][1])
            except Exception as exc:  # noqa: BLE001 - the worker then builds the extensions as torch does
                broken, section = None, {"cache_root": None, "environment": {}, "ahead": {},
                                         "why_not_ahead": f"the build pool failed: {type(exc).__name__}: {exc}"}
            if broken is not None:
                results[index] = EvalResult(status="compile_error", reason="kernel_compile_error",
                                            guards=checked[index], message=broken)
                return
            self.inline_sections[index] = section
        work.put(index)

    def _drain(self, lane: Lane, work: queue.Queue, items: list[Item], checked: list, results: list,
               timing: bool, until: float | None = None) -> None:
        self._planned.wait()
        if self._building and lane.worker is not None and lane.worker.proc is None and work.empty():
            # start the worker (Python, torch, CUDA) while the first extensions build, not after
            with contextlib.suppress(WorkerStartError):  # the first job tries again, and reports it
                lane.worker.start()
        while (index := work.get()) is not None:
            problem, source = items[index]
            if until is not None and time.monotonic() >= until:
                results[index] = EvalResult(status="timeout", reason=CUT_AT_DEADLINE,
                                            message="not judged: the caller's deadline came before its turn")
                continue
            try:
                results[index] = lane.judge(problem, source, checked[index], timing, self.inline_sections.get(index),
                                            until)
            except JudgingStopped:
                return  # no verdict: the batch is cut, and ``judge`` says so
            except Exception as exc:  # noqa: BLE001 - one candidate's trouble is its own verdict
                results[index] = EvalResult(status="runtime_error", reason="worker_error",
                                            message=f"the judge failed on this candidate: {type(exc).__name__}: {exc}")


class _Verdicts(list):
    """The batch's verdicts by index; each one, once set, gets its device and is handed to ``on_verdict``. Once the
    pipeline is ``stopped`` nothing more is set: a compile or a worker cut by the stop gives no verdict."""

    def __init__(self, size: int, device: str, on_verdict: Callable[[int, EvalResult], None] | None,
                 stopped: threading.Event) -> None:
        super().__init__([None] * size)
        self.device, self.on_verdict, self.stopped = device, on_verdict, stopped

    def __setitem__(self, index: Any, result: Any) -> None:
        if self.stopped.is_set():
            return
        if isinstance(result, EvalResult):
            result.device = result.device or self.device
        super().__setitem__(index, result)
        if self.on_verdict is not None and isinstance(result, EvalResult):
            try:
                self.on_verdict(index, result)
            except Exception:  # noqa: BLE001 - the caller's bookkeeping must not cost the batch its verdicts
                pass
