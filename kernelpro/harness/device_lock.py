"""One judgment at a time on a device, across every kernelpro process on the machine.

Two processes timing on one GPU at once read each other's kernels as their own: a suite with
``suite.lanes_per_gpu`` above 1, an `optimize` started beside a suite, two users' runs. Each holds an exclusive
``flock`` on the device's lock file while a worker judges a candidate (correctness, timing, energy) and while
Nsight Compute profiles; what needs no device (process starts, imports, compiles, model calls) runs outside
it, so several lanes on one GPU overlap everything but the measurements. A candidate's warm-up (its first
call: Inductor's compiles and autotuning) may hold the lock shared instead (``harness.warm_up_shared``): warm-ups
then overlap each other, never a measurement. The kernel drops a flock when its holder's file closes or the
process dies, so a killed run never leaves a device locked.

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


@contextmanager
def device_lock(device: str, harness: HarnessSettings, shared: bool = False) -> Iterator[float]:
    """Hold ``device``'s lock for the block (``harness.device_lock`` says which devices lock); yields the seconds
    spent waiting for it. A lock file that cannot be opened is warned about, and the block runs unlocked.

    ``shared``: held beside other shared holders, never beside an exclusive one (a measurement): for work that
    may overlap other such work but no measurement (``harness.warm_up_shared``). The lock prefers the exclusive:
    a turnstile file, held while waiting for the lock and let go once it is held, keeps new shared holders from
    starving a measurement that waits."""
    if not locks(device, harness):
        yield 0.0
        return
    key = device_key(device)
    opened: list[int] = []
    try:
        for name in (f"{key}.turnstile", f"{key}.lock"):
            opened.append(_open(lock_dir(harness) / name))
    except OSError as error:
        for fd in opened:
            os.close(fd)
        warnings.warn(f"cannot open the device lock in {lock_dir(harness)} ({error}): judging on {device} without "
                      "it, so another process's measurements may overlap this one's", RuntimeWarning, stacklevel=3)
        yield 0.0
        return
    turnstile, fd = opened
    start = time.monotonic()
    try:
        with os.fdopen(turnstile) as gate:  # closing a file drops its lock
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield time.monotonic() - start
    finally:
        os.close(fd)
