"""A job's hold on the device, from inside the worker, while it shares the device until timing
(``harness.share_until_timing``).

The judge holds the device's lock for the job (``device_lock.SharedTurn``); the job says on its message channel
when that hold may change, and the judge answers a request that waits with the line ``{"go": true}``:

- ``{"turn": "none"}``: compiling from here on, nothing to run on the device. The judge lets its shared hold go,
  so a measurement that waits for the device does not wait for this compile too. A ``max-autotune`` compile runs
  for a minute and more, nearly all of it on the CPU; held shared, it kept every other lane's timing waiting.
- ``{"turn": "shared"}``: the device is needed again (the compile ended, or a benchmark did), answered once
  the judge holds the lock shared again, after any measurement then under way.
- ``{"turn": "benchmark"}``: the device alone for one of autotuning's benchmarks, answered once no one else
  holds it; ``none`` (inside a compile) or ``shared`` after it.
- ``{"turn": "exclusive"}``: before timing, the device alone for good; answered once no one else holds it.

Only Dynamo's own compiles (and a lazily compiled backward) let the device go: Dynamo also reports CUDA-graph
recording as compiling, which runs kernels. Inductor's benchmarker (autotuning's measurements of its kernel
choices), in a compile or not, holds the device alone for each benchmark (``alone_to_benchmark``): choices
timed beside another lane's checks read slower than they are at random, and autotuning keeps the one that read
fastest, not the one that is.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

Emit = Callable[[dict[str, Any]], None]
# Dynamo's CallbackTrigger names whose window runs no kernels of its own: the device may go meanwhile.
DEVICE_FREE_TRIGGERS = {"DYNAMO", "LAZY_BACKWARD"}


def releases_while_compiling(setting: str, device: str) -> bool:
    """``harness.release_while_compiling`` on ``device``: ``auto`` on GPUs only, since on the CPU the compile
    runs on the device itself."""
    return setting == "on" or (setting == "auto" and device.startswith("cuda"))


class DeviceTurns:
    """The job's side of the hold: ``shared`` (held beside other jobs' checks), ``released`` (compiling),
    ``benchmarking`` (alone, for a benchmark), ``alone`` (timing). A job that does not share the device
    (``sharing`` False) says nothing: the judge holds it alone throughout."""

    def __init__(self, emit: Emit, await_go: Callable[[], None] | None, sharing: bool,
                 release_while_compiling: bool = True) -> None:
        self.emit, self.await_go = emit, await_go
        self.state = "shared" if sharing and await_go is not None else "held"
        self.release_while_compiling = release_while_compiling
        self.lock = threading.RLock()  # compiles and benchmarks may run on more than one thread
        self.benchmarks_running = 0
        self.after_benchmarks = "shared"  # the hold to go back to once the benchmarks under way end

    def _ask(self, turn: str) -> None:
        self.emit({"turn": turn})
        assert self.await_go is not None
        self.await_go()

    def compile_started(self, trigger: str | None) -> None:
        with self.lock:
            if trigger not in DEVICE_FREE_TRIGGERS or not self.release_while_compiling:
                return
            if self.state == "shared":
                self.emit({"turn": "none"})
                self.state = "released"
            elif self.state == "benchmarking":
                self.after_benchmarks = "released"

    def compile_ended(self) -> None:
        with self.lock:
            if self.state == "released":
                self._ask("shared")
                self.state = "shared"
            elif self.state == "benchmarking":
                self.after_benchmarks = "shared"

    @contextlib.contextmanager
    def alone_to_benchmark(self) -> Iterator[None]:
        """The device held alone for the block, a benchmark, when the job held it shared or had let it go; then
        back to that. Benchmarks running at once on several threads share one hold."""
        with self.lock:
            if self.state in ("shared", "released"):
                self.after_benchmarks = self.state
                self._ask("benchmark")
                self.state = "benchmarking"
            holding = self.state == "benchmarking"
            self.benchmarks_running += holding
        try:
            yield
        finally:
            if holding:
                with self.lock:
                    self.benchmarks_running -= 1
                    if self.benchmarks_running == 0 and self.state == "benchmarking":
                        if self.after_benchmarks == "released":
                            self.emit({"turn": "none"})
                        else:
                            self._ask("shared")
                        self.state = self.after_benchmarks

    @property
    def held_alone(self) -> bool:
        """Whether the job has the device to itself: it never shared it, or it is timing."""
        return self.state in ("held", "alone")

    def alone(self) -> None:
        """Wait until the judge holds the device alone for this job (a job that shares it, before timing)."""
        with self.lock:
            if self.held_alone:
                return
            self._ask("exclusive")
            self.state = "alone"


# Inductor's benchmarker methods that run kernels on the device to time them (autotuning's choices).
BENCHMARK_METHODS = ("benchmark", "benchmark_gpu", "benchmark_gpu_with_cuda_graph")


@contextlib.contextmanager
def benchmarks_hold_the_device(turns: DeviceTurns) -> Iterator[None]:
    """For the block, every benchmark Inductor runs holds the device alone, compiling or not
    (``DeviceTurns.alone_to_benchmark``).
    The benchmarker is one shared object (``torch._inductor.runtime.benchmarking.benchmarker``), so wrapping its
    methods covers autotuning wherever it is started from."""
    try:
        from torch._inductor.runtime.benchmarking import benchmarker
    except ImportError:
        yield
        return
    own = vars(benchmarker)
    wrapped: dict[str, Any] = {}  # name: the instance's own attribute before, else None
    for name in BENCHMARK_METHODS:
        original = getattr(benchmarker, name, None)
        if original is None:
            continue

        def holding(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            with turns.alone_to_benchmark():
                return _original(*args, **kwargs)

        wrapped[name] = own.get(name)
        setattr(benchmarker, name, holding)
    try:
        yield
    finally:
        for name, before in wrapped.items():
            if before is not None:
                setattr(benchmarker, name, before)
            else:
                with contextlib.suppress(AttributeError):
                    delattr(benchmarker, name)  # the class's own method again
