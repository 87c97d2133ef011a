"""Quantities several diagnosers read: speed-of-light percentages, stall shares, occupancy, memory traffic.

Every helper returns None when ncu did not collect what it needs, so a diagnoser skips its check rather than
guess (a CSV from `--section SpeedOfLight` alone holds a few dozen metrics). Percentages stay in 0..100 as ncu
reports them; shares and fractions are 0..1.
"""

from __future__ import annotations

from kernelpro.profiling.findings import Evidence, Finding, Severity
from kernelpro.profiling.metrics import KernelMetrics

SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_PCT = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_PCT_ALT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
L2_PCT = "lts__throughput.avg.pct_of_peak_sustained_elapsed"
L1_PCT = "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"
ISSUE_PCT = "smsp__issue_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY_PCT = "sm__maximum_warps_per_active_cycle_pct"
ACHIEVED_OCCUPANCY_PCT = "sm__warps_active.avg.pct_of_peak_sustained_active"
REGISTERS = "launch__registers_per_thread"
SM_COUNT = "launch__sm_count"

# Busy: the share of a unit's peak above which it, not latency, sets the pace. ncu's SOL rule calls a unit
# "well utilised" from 60 %, and 80 % is about what a streaming kernel reaches on HBM.
BUSY_PCT = 60.0
# Kernels shorter than this are dominated by launch and ramp-up: the launch_overhead plant (128 KiB of work,
# 2.4 us) sets the floor, and a kernel 4x longer still spends a quarter of its time filling and draining.
SHORT_KERNEL_NS = 10_000.0
# The duration of an almost empty launch on an H200 (the launch_overhead plant: 2.4 us for 128 KiB).
LAUNCH_FLOOR_NS = 2_000.0

_STALL_PREFIX = "smsp__average_warps_issue_stalled_"
_STALL_SUFFIX = "_per_issue_active.ratio"
_SAMPLE_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
# "selected" is the issuing warp itself, not a stall; "not_selected" means another warp issued (healthy).
_NOT_STALLS = {"selected"}


def dram_pct(k: KernelMetrics) -> float | None:
    return k.first(DRAM_PCT, DRAM_PCT_ALT)


def busiest_pct(k: KernelMetrics) -> float | None:
    """The busiest of compute and memory as % of peak: ncu's speed-of-light headline."""
    values = [v for v in (k.get(SM_PCT), k.get(MEMORY_PCT), dram_pct(k)) if v is not None]
    return max(values) if values else None


def is_short(k: KernelMetrics) -> bool:
    duration = k.duration_ns
    return duration is not None and 0 < duration < SHORT_KERNEL_NS


def stall_shares(k: KernelMetrics) -> dict[str, float] | None:
    """Each stall reason's share of all warp stall cycles (per-issue ratios; PC samples where those are missing)."""
    raw = {m[len(_STALL_PREFIX):-len(_STALL_SUFFIX)]: v for m, v in k.values.items()
           if m.startswith(_STALL_PREFIX) and m.endswith(_STALL_SUFFIX)}
    if not raw:
        raw = {m[len(_SAMPLE_PREFIX):]: v for m, v in k.values.items()
               if m.startswith(_SAMPLE_PREFIX) and not m.endswith("_not_issued")}
    raw = {name: value for name, value in raw.items() if name not in _NOT_STALLS}
    total = sum(raw.values())
    return {name: value / total for name, value in raw.items()} if total > 0 else None


def stall_share(k: KernelMetrics, *reasons: str) -> float | None:
    shares = stall_shares(k)
    return None if shares is None else sum(shares.get(reason, 0.0) for reason in reasons)


def sm_active_fraction(k: KernelMetrics) -> float | None:
    """Share of the kernel's time the average SM had work: low when the grid leaves SMs idle."""
    active, elapsed = k.get("sm__cycles_active.avg"), k.get("sm__cycles_elapsed.avg")
    return active / elapsed if active is not None and elapsed else None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator is not None and denominator else None


def total(k: KernelMetrics, *metrics: str) -> float | None:
    """Sum of the metrics that were collected; None when none was."""
    present = [k.values[m] for m in metrics if m in k.values]
    return sum(present) if present else None


def severity_for(impact: float) -> Severity:
    return "high" if impact >= 0.3 else "medium" if impact >= 0.1 else "low"


def evidence(metric: str, value: float, unit: str = "", threshold: str = "") -> Evidence:
    return Evidence(metric=metric, value=round(value, 4), unit=unit, threshold=threshold)


def finding(id: str, title: str, impact: float, explanation: str, advice: list[str], evidence: list[Evidence],
            detail: str = "", severity: Severity | None = None) -> Finding:
    impact = min(max(impact, 0.0), 1.0)
    return Finding(id=id, severity=severity or severity_for(impact), title=title, evidence=evidence,
                   explanation=explanation, advice=advice, impact=round(impact, 3), detail=detail)


def pct(value: float) -> str:
    """A percentage for prose: 90%, 12.5%, 0.7%."""
    return f"{value:.0f}%" if value >= 99.5 else f"{value:.3g}%" if value >= 1 else f"{value:.1g}%"


def duration(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} us"


def thread_ops(k: KernelMetrics, op: str) -> float | None:
    """Thread-level instructions of one SASS op (ffma, fadd, hfma, dfma, ...) with the predicate on.

    `--set full` records them as a rate per elapsed cycle summed over schedulers; times the cycles per scheduler
    that is the count. A direct `.sum` is used where a profile has it.
    """
    direct = k.get(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum")
    if direct is not None:
        return direct
    rate = k.get(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")
    cycles = k.get("smsp__cycles_elapsed.avg")
    return rate * cycles if rate is not None and cycles is not None else None
