"""One profiled kernel launch as plain data: metric name -> value in base units.

ncu names metrics `unit__counter.rollup.submetric` (e.g. `dram__throughput.avg.pct_of_peak_sustained_elapsed`).
Values are stored as ncu reports them with `--print-units base`: bytes, nanoseconds, cycles, hertz, percent. A
metric ncu could not collect (`n/a`) is absent, never zero, so a diagnoser can tell "0 %" from "unknown".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class KernelMetrics:
    """One kernel launch from ncu's raw page (CSV or .ncu-rep)."""

    name: str  # demangled function name without arguments, e.g. "planted_memory_bound"
    launch: int  # ncu's launch ID within the profiled program
    values: Mapping[str, float] = field(default_factory=dict)  # numeric metrics, base units
    units: Mapping[str, str] = field(default_factory=dict)  # metric -> unit string ("byte", "ns", "%", ...)
    text: Mapping[str, str] = field(default_factory=dict)  # non-numeric attributes (cache config, policy, ...)
    full_name: str = ""  # the signature as ncu printed it, e.g. "planted_memory_bound(float *, int)"
    block: tuple[int, int, int] | None = None
    grid: tuple[int, int, int] | None = None
    # ncu's own rule results (from .ncu-rep files only): [{"rule", "type", "message", "speedup"}]
    rules: tuple[Mapping[str, Any], ...] = ()

    def get(self, metric: str, default: float | None = None) -> float | None:
        return self.values.get(metric, default)

    def first(self, *metrics: str) -> float | None:
        """The first of several equivalent metric names that was collected (names differ between ncu versions)."""
        for metric in metrics:
            if metric in self.values:
                return self.values[metric]
        return None

    def has(self, *metrics: str) -> bool:
        return all(metric in self.values for metric in metrics)

    @property
    def duration_ns(self) -> float | None:
        return self.get("gpu__time_duration.sum")

    @property
    def sm_clock_hz(self) -> float | None:
        """The SM clock the kernel ran at (clocks are never locked, so it must be recorded with the profile)."""
        return self.get("gpc__cycles_elapsed.avg.per_second")

    @property
    def block_size(self) -> int | None:
        size = self.get("launch__block_size")
        return int(size) if size is not None else None

    @property
    def grid_size(self) -> int | None:
        size = self.get("launch__grid_size")
        return int(size) if size is not None else None

    def subset(self, prefixes: Iterable[str]) -> dict[str, float]:
        """Metrics whose names start with any of the prefixes (for evidence tables and artifacts)."""
        prefixes = tuple(prefixes)
        return {k: v for k, v in self.values.items() if k.startswith(prefixes)}
