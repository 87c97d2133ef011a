"""One judgment at a time on a device, across every kernelpro process on the machine.

Two processes timing on one GPU at once read each other's kernels as their own: a suite with
``suite.lanes_per_gpu`` above 1, an `optimize` started beside a suite, two users' runs. Each holds an exclusive
``flock`` on the device's lock file while a worker judges a candidate (correctness, timing, energy) and while
Nsight Compute profiles; what needs no device (process starts, imports, compiles, model calls) runs outside
it, so several lanes on one GPU overlap everything but the measurements. A long-lived worker's job may hold the
lock shared until it times (``harness.share_until_timing``): loading and the correctness checks then overlap
other such work, the lock is let go while the job compiles (``SharedTurn.let_go``), and the job takes it alone
for each of autotuning's benchmarks (``SharedTurn.take_alone_to_benchmark``) and for its timing
(``SharedTurn.take_exclusive``). The kernel drops a flock when its holder's
file closes or the process dies, so a killed run never leaves a device locked.

A device's key is its physical identity: ``CUDA_VISIBLE_DEVICES``' entry for a visible index (a suite's lane
sees its GPU as GPU 0), so the same GPU gets the same lock in every process. Two processes that name one GPU
differently (an index in one, a UUID in the other) do not share a lock.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernelpro.config import HarnessSettings


def physical_gpu(index: int) -> str:
    """The driver's name for visible GPU ``index``: CUDA_VISIBLE_DEVICES' entry (CUDA's variable), else it."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[index] if index < len(visible) else str(index)


def device_key(device: str) -> str:
    """``gpu-<physical>`` for ``cuda``/``cuda:N``, ``cpu`` otherwise."""
    if not device.startswith("cuda"):
        return "cpu"
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    return "gpu-" + re.sub(r"[^A-Za-z0-9_.-]", "_", physical_gpu(index))


def lock_dir(harness: HarnessSettings) -> Path:
    return Path(harness.device_lock_dir or Path(tempfile.gettempdir()) / "kernelpro-device-locks")


def _open(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:  # shared by every user of the machine, like /tmp itself
        os.chmod(path.parent, 0o1777)
    except OSError:
        pass  # another user made it; its mode is theirs
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        os.fchmod(fd, 0o666)
    except OSError:
        pass
    return fd


def locks(device: str, harness: HarnessSettings) -> bool:
    """Whether ``harness.device_lock`` locks ``device``."""
    return harness.device_lock == "on" or (harness.device_lock == "auto" and device.startswith("cuda"))


def _lock_files(device: str, harness: HarnessSettings) -> tuple[int, int] | None:
    """The device's turnstile and lock files, opened; None when ``harness.device_lock`` leaves the device
    unlocked, or (with a warning) when they cannot be opened."""
    if not locks(device, harness):
        return None
    key = device_key(device)
    opened: list[int] = []
    try:
        for name in (f"{key}.turnstile", f"{key}.lock"):
            opened.append(_open(lock_dir(harness) / name))
    except OSError as error:
        for fd in opened:
            os.close(fd)
        warnings.warn(f"cannot open the device lock in {lock_dir(harness)} ({error}): judging on {device} without "
                      "it, so another process's measurements may overlap this one's", RuntimeWarning, stacklevel=4)
        return None
    return opened[0], opened[1]


def _through_turnstile(turnstile: int, fd: int, mode: int) -> float:
    """Take ``fd``'s flock in ``mode`` while holding the turnstile; the seconds it took."""
    start = time.monotonic()
    fcntl.flock(turnstile, fcntl.LOCK_EX)
    try:
        fcntl.flock(fd, mode)
    finally:
        fcntl.flock(turnstile, fcntl.LOCK_UN)
    return time.monotonic() - start


class SharedTurn:
    """The device's lock held shared, for as long as the block lasts, until ``take_exclusive`` makes it the
    device's only holder (a job's timing after its checks). In between, ``let_go`` drops the shared hold while
    the job needs no device (it compiles) and ``take_shared`` takes it back. ``spans`` counts the seconds in
    each state: ``waited_to_start`` (for the first shared hold), ``shared``, ``released``, ``waited_shared``
    (to take it back), ``waited_benchmark`` and ``benchmarking`` (alone for autotuning's benchmarks),
    ``waited_alone``, ``alone``; ``taken_back`` how often it was taken back after a compile, ``benchmarks`` how
    often it was held alone to benchmark."""

    def __init__(self, files: tuple[int, int] | None, waited_to_start: float = 0.0) -> None:
        self.files = files
        self.taken_back = self.benchmarks = 0
        self.spans = dict.fromkeys(("waited_to_start", "shared", "released", "waited_shared", "waited_benchmark",
                                    "benchmarking", "waited_alone", "alone"), 0.0)
        self.spans["waited_to_start"] = waited_to_start
        self._state, self._since = "shared", time.monotonic()

    @property
    def exclusive(self) -> bool:
        """Whether the block asked for the device alone (and, once the wait is over, holds it so)."""
        return self._state in ("waited_alone", "alone")

    @property
    def released(self) -> bool:
        """Whether the shared hold is let go, and not yet taken back."""
        return self._state == "released"

    @property
    def may_benchmark(self) -> bool:
        """Whether ``take_alone_to_benchmark`` would take it: held shared or let go, not yet alone to time."""
        return self._state in ("shared", "released")

    @property
    def benchmarking(self) -> bool:
        """Whether it is held alone for a benchmark, until ``take_shared`` or ``let_go``."""
        return self._state == "benchmarking"

    @property
    def waited_s(self) -> float:
        """The seconds spent waiting for the lock: to start, to take it back, to benchmark, to hold it alone."""
        return sum(self.spans[k] for k in ("waited_to_start", "waited_shared", "waited_benchmark", "waited_alone"))

    def _enter(self, state: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self.spans[self._state] += now - self._since
        self._state, self._since = state, now

    def close(self) -> None:
        self._enter(self._state)

    def _drop(self) -> None:
        """Let the lock go, whatever the hold (the turn's state says what comes next)."""
        if self.files is not None:
            fcntl.flock(self.files[1], fcntl.LOCK_UN)

    def _wait(self, mode: int, waiting: str, then: str) -> float:
        self._enter(waiting)
        waited = _through_turnstile(*self.files, mode) if self.files is not None else 0.0
        self._enter(then)
        return waited

    def let_go(self) -> None:
        """Drop the hold, shared or alone for a benchmark (no-op otherwise)."""
        if self._state not in ("shared", "benchmarking"):
            return
        self._drop()
        self._enter("released")

    def take_shared(self) -> float:
        """Hold the lock shared again after ``let_go`` or a benchmark; the seconds spent waiting (for a
        measurement)."""
        if self.benchmarking:
            self._drop()  # alone to shared through the turnstile, like any holder
        elif self.released:
            self.taken_back += 1
        else:
            return 0.0
        return self._wait(fcntl.LOCK_SH, "waited_shared", "shared")

    def take_alone_to_benchmark(self) -> float:
        """Hold the lock alone for one of autotuning's benchmarks, from a shared hold or a let-go one, until
        ``take_shared`` or ``let_go``; the seconds spent waiting. Kernel choices timed beside other lanes' work
        read slower than they are at random, and autotuning keeps whichever read fastest: on an H200 suite whose
        benchmarks held the device shared, a max-autotune baseline read 0.50x where it had read 1.01x alone."""
        if not self.may_benchmark:
            return 0.0
        self.benchmarks += 1
        if self._state == "shared":
            self._drop()  # as in take_exclusive: two upgrading at once never deadlock
        return self._wait(fcntl.LOCK_EX, "waited_benchmark", "benchmarking")

    def take_exclusive(self) -> float:
        """Hold the lock alone from now on; the seconds spent waiting for it. The shared hold is let go first:
        two holders upgrading at once would otherwise each wait for the other's shared hold to end."""
        if self.exclusive:
            return 0.0
        if self.benchmarking:  # held alone already; through the turnstile it could wait on a waiter for this lock
            self._enter("alone")
            return 0.0
        if self._state == "shared":
            self._drop()
        return self._wait(fcntl.LOCK_EX, "waited_alone", "alone")


@contextmanager
def shared_until_exclusive(device: str, harness: HarnessSettings) -> Iterator[SharedTurn]:
    """Hold ``device``'s lock shared for the block, until the block calls ``take_exclusive`` on what it gets
    (whose ``waited_s`` counts the seconds spent waiting). An unlocked device gives a turn that locks nothing."""
    files = _lock_files(device, harness)
    turn = SharedTurn(files, _through_turnstile(*files, fcntl.LOCK_SH) if files is not None else 0.0)
    try:
        yield turn
    finally:
        turn.close()
        for fd in files or ():
            os.close(fd)  # closing a file drops its lock


@contextmanager
def device_lock(device: str, harness: HarnessSettings, shared: bool = False) -> Iterator[float]:
    """Hold ``device``'s lock for the block (``harness.device_lock`` says which devices lock); yields the seconds
    spent waiting for it. A lock file that cannot be opened is warned about, and the block runs unlocked.

    ``shared``: held beside other shared holders, never beside an exclusive one (a measurement). The lock
    prefers the exclusive: a turnstile file, held while waiting for the lock and let go once it is held, keeps
    new shared holders from starving a measurement that waits."""
    files = _lock_files(device, harness)
    if files is None:
        yield 0.0
        return
    try:
        yield _through_turnstile(*files, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
    finally:
        for fd in files:
            os.close(fd)
