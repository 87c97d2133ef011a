"""What is known of a suite's problems before it runs, for ``--overnight``'s plan: their cached baselines'
verdicts, what earlier suites here spent a problem, and the GPU's memory.

A problem whose compile baselines were judged on this machine before (the baseline cache, ``baseline_cache``,
under the very key a run of it would look up) has a measured judgment: its device seconds say what judging that
problem costs here. Earlier suites in the same runs directory say what a whole problem cost (its GPU and wall
seconds in their ledgers); the settings' figures stand in where no suite finished one.
"""

from __future__ import annotations

import sqlite3
import statistics
from dataclasses import dataclass
from pathlib import Path

from kernelpro.config import Settings
from kernelpro.problem import ProblemError, load_problem
from kernelpro.suite.baseline_cache import BaselineCache
from kernelpro.suite.baselines import COMPILE_BASELINES, baseline_source
from kernelpro.suite.ledger import Ledger, LedgerError
from kernelpro.suite.sources import ProblemRef


@dataclass(frozen=True)
class Measured:
    """What the cached baselines of one problem say: one judgment's device seconds, the most GPU memory one held
    while timed (None where not recorded)."""

    judgment_s: float
    peak_mb: float | None = None


@dataclass(frozen=True)
class PerProblem:
    """What a problem nothing is known of costs: GPU seconds, a lane's wall seconds, and where that came from."""

    gpu_s: float
    wall_s: float
    source: str

    @property
    def overhead_s(self) -> float:
        """A problem's wall time beside its GPU time (model calls, compiles, its process), the same for all."""
        return max(0.0, self.wall_s - self.gpu_s)


def judgments_per_problem(max_iters: int, settings: Settings) -> int:
    """The verdicts a problem's run takes: its candidates and its finalists' re-judgments."""
    return max(1, max_iters + settings.search.finalists)


def cached_judgments(refs: list[ProblemRef], device: str, settings: Settings) -> dict[str, Measured]:
    """Each problem with a compile baseline's verdict in the cache for this machine, software and settings:
    key -> what it measured. Nothing is run; a problem that cannot be read, or a machine NVML cannot name, has
    none."""
    from kernelpro.suite import baseline_key as keys

    if settings.cache.baselines == "off" or not refs:
        return {}
    machine = keys.machine_identity(device)
    if machine is None:
        return {}
    software, cache, found = keys.software(), BaselineCache(settings.cache.baselines_dir), {}
    for ref in refs:
        try:
            problem = load_problem(ref.path)
            codes = {name: baseline_source(problem, name) for name in COMPILE_BASELINES}
        except (ProblemError, ValueError):  # a reference whose Model cannot be wrapped has no compile baseline
            continue
        seconds, peaks = [], []
        for name, code in codes.items():
            hit, _ = cache.get(keys.baseline_key(problem, name, code, device, settings, machine, software))
            if hit is None:
                continue
            if (spent := hit.result.device_s or hit.result.elapsed_s or 0.0) > 0:
                seconds.append(spent)
            if (peak := ((hit.result.details or {}).get("timing") or {}).get("gpu_peak_mb")) is not None:
                peaks.append(float(peak))
        if seconds:
            found[ref.key] = Measured(statistics.median(seconds), max(peaks) if peaks else None)
    return found


def earlier_suites(runs_dir: Path, device: str, judgments: int, settings: Settings) -> PerProblem | None:
    """What a finished problem of the earlier suites in ``runs_dir`` on ``device`` cost, scaled by the verdicts
    its run took to ``judgments``; None where none finished one."""
    gpu, wall = [], []
    for path in sorted(Path(runs_dir).glob("*/ledger.sqlite")):
        try:
            ledger = Ledger.open(path)
            config, rows = ledger.suite()["config"], ledger.problems()
        except (LedgerError, sqlite3.Error, ValueError, OSError):  # a ledger being made, or not a suite's
            continue
        if config.get("device") != device:
            continue
        scale = judgments / judgments_per_problem(int(config.get("max_iters") or 1), settings)
        for row in rows:
            if row.state in ("done", "budget") and (row.gpu_s or 0) > 0 and (row.wall_s or 0) > 0:
                gpu.append(row.gpu_s * scale)
                wall.append(row.wall_s * scale)
    if not gpu:
        return None
    unit = "GPU" if device == "cuda" else "CPU"
    return PerProblem(statistics.mean(gpu), statistics.mean(wall),
                      f"{statistics.mean(gpu) / 60:.1f} {unit}-minutes a problem where nothing is known, "
                      f"measured over {len(gpu)} problem(s) of earlier suites here")


def per_problem(runs_dir: Path, device: str, judgments: int, settings: Settings) -> PerProblem:
    """What a problem nothing is known of costs: from earlier suites here, else the settings' measured figures."""
    measured = earlier_suites(runs_dir, device, judgments, settings)
    if measured is not None:
        return measured
    suite = settings.suite
    return PerProblem(suite.overnight_gpu_minutes_per_problem * 60, suite.overnight_lane_minutes_per_problem * 60,
                      f"{suite.overnight_gpu_minutes_per_problem:g} GPU-minutes a problem where nothing is known, "
                      "suite.overnight_gpu_minutes_per_problem as measured on an H100")


def gpu_memory_mb() -> float | None:
    """The first visible GPU's memory through NVML (no CUDA context started); None where NVML cannot tell."""
    from kernelpro.harness.device_lock import physical_gpu

    visible = physical_gpu(0)
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(int(visible)) if visible.isdigit() else \
                pynvml.nvmlDeviceGetHandleByUUID(visible)
            return pynvml.nvmlDeviceGetMemoryInfo(handle).total / 2**20
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML, no such device, a MIG slice NVML does not name
        return None


def lanes_per_gpu(wanted: int, total_mb: float | None, peak_mb: float | None) -> int:
    """``wanted`` lanes on a GPU (``suite.lanes_per_gpu``), never more than its memory holds of the largest job
    timed there; ``wanted`` where either is unknown."""
    if not total_mb or not peak_mb:
        return wanted
    return max(1, min(wanted, int(total_mb // peak_mb)))
