"""Many compiles at once in a pool of CPU processes, ahead of the GPU queue.

Every job comes back as a ``CompileResult`` in the order asked, whatever happens to it. A compiler that
hangs inside NVRTC cannot be interrupted from Python, so each job arms a real-time alarm whose default
action ends its worker; a worker that dies takes the pool down with it, and then only the jobs that were
running at that moment (each leaves a marker file while it runs) are retried alone to find the culprit,
while the jobs that never started go to a fresh pool.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Literal

from kernelpro.config import CompileSettings
from kernelpro.harness.compile.cache import CompileCache, compile_cached, request_key
from kernelpro.harness.compile.dispatch import compile_source
from kernelpro.harness.compile.result import CompileRequest, CompileResult, failed
from kernelpro.harness.compile.toolchain import Toolchain, detect
from kernelpro.harness.isolation.walls import hide_this_process

MAX_POOL_ROUNDS = 3


def _init_worker() -> None:
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    hide_this_process()  # spawned with the judge's whole environment, credentials included


def _job(index: int, request: dict[str, Any], settings: dict[str, Any], toolchain: Toolchain, use_cache: bool,
         alarm_s: float, markers: str) -> CompileResult:
    """One compile inside a pool worker. The alarm ends this process if the compiler never returns."""
    req = CompileRequest.model_validate(request)
    marker = Path(markers) / str(index)
    marker.touch()
    signal.setitimer(signal.ITIMER_REAL, alarm_s)
    try:
        s = CompileSettings.model_validate(settings)
        return compile_cached(req, s, toolchain=toolchain) if use_cache else compile_source(req, s, toolchain)
    except Exception as exc:  # whatever happens to one job stays that job's result
        return failed(req, "internal", f"{type(exc).__name__}: {exc}", arch=req.arch or "")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        marker.unlink(missing_ok=True)


def alarm_seconds(settings: CompileSettings) -> float:
    """Past nvcc's own timeout (which ends it more gently), so the alarm only catches a hung NVRTC."""
    return settings.timeout_s * 1.1 + 1.0


class _Batch:
    """The jobs of one ``compile_many`` call and where their results stand."""

    def __init__(self, requests: list[CompileRequest], settings: CompileSettings, toolchain: Toolchain,
                 use_cache: bool, workers: int) -> None:
        self.requests, self.settings, self.toolchain = requests, settings, toolchain
        self.use_cache, self.workers = use_cache, workers
        self.results: list[CompileResult | None] = [None] * len(requests)
        self.alarm_s = alarm_seconds(settings)
        self.markers = tempfile.mkdtemp(prefix="kernelpro-compile-pool-")

    def submit(self, executor: ProcessPoolExecutor, index: int) -> Future:
        return executor.submit(_job, index, self.requests[index].model_dump(mode="json"),
                               self.settings.model_dump(mode="json"), self.toolchain, self.use_cache, self.alarm_s,
                               self.markers)

    def run_round(self, todo: list[int], workers: int) -> tuple[list[int], bool]:
        """Run ``todo`` in one pool. Returns the jobs a dead worker left without a result, and whether it died."""
        executor = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_init_worker)
        unfinished: list[int] = []
        broken = hung = False
        started = time.monotonic()
        # A backstop in case an alarm never fires: every job one after another on one worker, and a margin.
        deadline = started + self.alarm_s * -(-len(todo) // workers) + 60
        futures: dict[int, Future] = {}
        try:
            for i in todo:
                try:
                    futures[i] = self.submit(executor, i)
                except BrokenProcessPool:  # a worker died before everything was queued
                    unfinished.append(i)
                    broken = True
            for i, future in futures.items():
                try:
                    self.results[i] = future.result(timeout=max(0.0, deadline - time.monotonic()))
                except BrokenProcessPool:
                    unfinished.append(i)
                    broken = True
                except FutureTimeout:
                    hung = True
                    self.results[i] = self.failure(i, "timeout", time.monotonic() - started)
                except Exception as exc:  # e.g. a result that could not be unpickled
                    self.results[i] = failed(self.requests[i], "internal", f"{type(exc).__name__}: {exc}")
        finally:
            if hung:
                for process in list(getattr(executor, "_processes", {}).values()):
                    process.kill()
            executor.shutdown(wait=True, cancel_futures=True)
        return unfinished, broken

    def failure(self, index: int, kind: Literal["timeout", "crash"], elapsed: float) -> CompileResult:
        request = self.requests[index]
        if kind == "timeout":
            message = f"the compiler did not finish within {self.settings.timeout_s:g} s"
        else:
            message = "the compiler crashed (its process died without a result)"
        return failed(request, kind, message, arch=request.arch or "", elapsed_s=elapsed,
                      toolchain=self.toolchain.tag(request.backend))

    def run_alone(self, index: int) -> None:
        """Retry one job in a pool of its own: if its worker dies again, the job itself is the cause."""
        started = time.monotonic()
        unfinished, _ = self.run_round([index], 1)
        if unfinished:
            elapsed = time.monotonic() - started
            self.results[index] = self.failure(index, "timeout" if elapsed >= self.alarm_s else "crash", elapsed)

    def run(self) -> None:
        todo = [i for i, r in enumerate(self.results) if r is None]
        for _ in range(MAX_POOL_ROUNDS):
            if not todo:
                break
            unfinished, broken = self.run_round(todo, min(self.workers, len(todo)))
            if not broken:
                break
            running = {int(p.name) for p in Path(self.markers).iterdir() if p.name.isdigit()}
            for index in sorted(running & set(unfinished)):
                (Path(self.markers) / str(index)).unlink(missing_ok=True)
                self.run_alone(index)
            todo = [i for i in unfinished if self.results[i] is None]
        for index in [i for i, r in enumerate(self.results) if r is None]:
            self.run_alone(index)

    def close(self) -> None:
        shutil.rmtree(self.markers, ignore_errors=True)


def compile_many(requests: Sequence[CompileRequest], settings: CompileSettings | None = None,
                 use_cache: bool = True, workers: int | None = None) -> list[CompileResult]:
    """Compile every request in a process pool (``settings.workers``; 0: one per core), results in order.

    Targets are resolved here, so workers never import torch; cached results are answered without a pool.
    Never raises for a bad source, a crashed or a hung compiler: those are failed results.
    """
    settings = settings or CompileSettings()
    toolchain = detect(settings)
    resolved = [request_key(r, settings, toolchain) for r in requests]
    batch = _Batch([r for r, _ in resolved], settings, toolchain, use_cache,
                   max(1, workers or settings.workers or os.cpu_count() or 1))
    try:
        if use_cache:
            cache = CompileCache(settings.cache_dir)
            for i, (_, key) in enumerate(resolved):
                batch.results[i] = cache.get(key)
        batch.run()
    except Exception as exc:  # the pool itself failed (no processes, no disk): every job left says so
        for i, result in enumerate(batch.results):
            if result is None:
                batch.results[i] = failed(batch.requests[i], "internal", f"compile pool: {type(exc).__name__}: {exc}")
    finally:
        batch.close()
    return [r for r in batch.results if r is not None]
