"""A job's hold on the device, from inside the worker, while it shares the device until timing
(``harness.share_until_timing``).

The judge holds the device's lock for the job (``device_lock.SharedTurn``); the job says on its message channel
when that hold may change, and the judge answers a request that waits with the line ``{"go": true}``:

- ``{"turn": "none"}``: compiling from here on, nothing to run on the device. The judge lets its shared hold go,
  so a measurement that waits for the device does not wait for this compile too. A ``max-autotune`` compile runs
  for a minute and more, nearly all of it on the CPU; held shared, it kept every other lane's timing waiting.
- ``{"turn": "shared"}``: the device is needed again (the compile ended, or it benchmarks its kernel choices),
  answered once the judge holds the lock shared again, after any measurement then under way.
- ``{"turn": "exclusive"}``: before timing, the device alone; answered once no one else holds it.

Only Dynamo's own compiles (and a lazily compiled backward) let the device go: Dynamo also reports CUDA-graph
recording as compiling, which runs kernels. Inside a compile, Inductor's benchmarker (autotuning's
measurements) takes the device back for each benchmark (``lent_back``).
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
    ``lent`` (released, but benchmarking inside the compile), ``alone`` (timing). A job that does not share
    the device (``sharing`` False) says nothing: the judge holds it alone throughout."""

    def __init__(self, emit: Emit, await_go: Callable[[], None] | None, sharing: bool,
                 release_while_compiling: bool = True) -> None:
        self.emit, self.await_go = emit, await_go
        self.state = "shared" if sharing and await_go is not None else "held"
        self.release_while_compiling = release_while_compiling
        self.lock = threading.RLock()  # compiles and benchmarks may run on more than one thread

    def _ask(self, turn: str) -> None:
        self.emit({"turn": turn})
        assert self.await_go is not None
        self.await_go()

    def compile_started(self, trigger: str | None) -> None:
        with self.lock:
            if self.state == "shared" and trigger in DEVICE_FREE_TRIGGERS and self.release_while_compiling:
                self.emit({"turn": "none"})
                self.state = "released"

    def compile_ended(self) -> None:
        with self.lock:
            if self.state in ("released", "lent"):
                if self.state == "released":
                    self._ask("shared")
                self.state = "shared"

    @contextlib.contextmanager
    def lent_back(self) -> Iterator[None]:
        """The device held (shared) for the block, when the job had let it go: a benchmark inside a compile."""
        with self.lock:
            borrowing = self.state == "released"
            if borrowing:
                self._ask("shared")
                self.state = "lent"
        try:
            yield
        finally:
            if borrowing:
                with self.lock:
                    if self.state == "lent":
                        self.emit({"turn": "none"})
                        self.state = "released"

    def alone(self) -> None:
        """Wait until the judge holds the device alone for this job (a job that shares it, before timing)."""
        with self.lock:
            if self.state == "held" or self.state == "alone":
                return
            self._ask("exclusive")
            self.state = "alone"


# Inductor's benchmarker methods that run kernels on the device to time them (autotuning's choices).
BENCHMARK_METHODS = ("benchmark", "benchmark_gpu", "benchmark_gpu_with_cuda_graph")


@contextlib.contextmanager
def benchmarks_hold_the_device(turns: DeviceTurns) -> Iterator[None]:
    """For the block, every benchmark Inductor runs holds the device, compiling or not (``DeviceTurns.lent_back``).
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
            with turns.lent_back():
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
