"""How busy the machine's CPUs are with other work, and how many threads a CPU judgment should use.

A CPU timing is only as good as the cores it ran on: with another job on the same cores, OpenMP's worker
threads wait at every barrier for a thread the scheduler has put aside, and a 0.05 ms call reads 6-10 ms. The
load is read from ``/proc/stat`` (every core's busy time) less this process's own CPU time, so the judge's own
work does not count as contention.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask), not every core of the machine."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _busy_seconds() -> float | None:
    """Every core's busy time since boot (idle and iowait excluded), or None where ``/proc/stat`` is missing."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    # guest time is already inside user time
    return (sum(fields[:8]) - idle) / _CLOCK_TICKS


def _own_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


@dataclass
class LoadReading:
    """Cores' worth of other work over a span of wall time."""

    other_cores: float
    wall_s: float


class LoadMeter:
    """Started before and read after a span: how many cores other processes kept busy during it."""

    def __init__(self) -> None:
        self._start = (time.monotonic(), _busy_seconds(), _own_seconds())

    def read(self) -> LoadReading | None:
        wall0, busy0, own0 = self._start
        wall, busy, own = time.monotonic(), _busy_seconds(), _own_seconds()
        if busy is None or busy0 is None or wall - wall0 <= 0:
            return None
        other = max(0.0, (busy - busy0) - (own - own0)) / (wall - wall0)
        return LoadReading(other_cores=round(other, 3), wall_s=round(wall - wall0, 3))


def sample_load(seconds: float = 0.1) -> LoadReading | None:
    """The other work's load over the next ``seconds`` (sleeping, so this process adds none)."""
    meter = LoadMeter()
    time.sleep(seconds)
    return meter.read()


def choose_threads(configured: int, other: LoadReading | None) -> int:
    """``configured`` when set; else the usable cores less those other work keeps busy, at least one."""
    if configured > 0:
        return configured
    busy = round(other.other_cores) if other is not None else 0
    return max(1, usable_cores() - busy)
