"""launch_overhead and low_parallelism: the launch itself, or too few blocks, leaves the GPU idle."""

from __future__ import annotations

from kernelpro.profiling.diagnosers.signals import (
    LAUNCH_FLOOR_NS,
    SHORT_KERNEL_NS,
    SM_COUNT,
    THEORETICAL_OCCUPANCY_PCT,
    duration,
    evidence,
    finding,
    is_short,
    sm_active_fraction,
)
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

# An SM idle for half the kernel is half the GPU wasted; ncu's launch-statistics rule warns from a grid smaller
# than the SM count, and a kernel whose average SM is busy less than half its time has the same problem.
SM_ACTIVE_MIN = 0.5
# Two waves let the scheduler balance blocks of uneven length and keep every SM busy to the end.
TARGET_WAVES = 2

_LIMITS = ("launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
           "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks")


def resident_blocks_per_sm(k: KernelMetrics) -> int | None:
    limits = [k.values[m] for m in _LIMITS if m in k.values]
    return int(min(limits)) if limits else None


def diagnose_launch_overhead(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    if not is_short(k):
        return []
    ns = k.duration_ns or 0.0
    return [finding(
        "launch_overhead", f"Launch-bound: the kernel lasts {duration(ns)}, about what an empty launch costs",
        impact=min(1.0, LAUNCH_FLOOR_NS / ns),
        explanation=(f"The kernel finishes in {duration(ns)}, close to the ~{duration(LAUNCH_FLOOR_NS)} it takes to "
                     "launch a grid, fill the SMs and drain them, so fixed costs rather than the work set its "
                     "time. Tuning the kernel body cannot help much; doing more work per launch can."),
        advice=["Fuse it with the kernels before or after it so one launch does the combined work and the "
                "intermediate never leaves the chip.",
                "If it runs many times in a row, batch the calls into one launch (a batch dimension in the grid) "
                "or capture the sequence in a CUDA graph to remove per-launch CPU cost.",
                "A persistent kernel that loops over work items keeps the SMs filled between items."],
        evidence=[evidence("gpu__time_duration.sum", ns, "ns", f"< {SHORT_KERNEL_NS:,.0f} ns")])]


def diagnose_low_parallelism(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    grid, sms = k.grid_size, int(k.get(SM_COUNT) or gpu.sm_count)
    active = sm_active_fraction(k)
    small_grid = grid is not None and sms > 0 and grid < sms
    idle_sms = active is not None and active < SM_ACTIVE_MIN and not is_short(k)
    if not (small_grid or idle_sms):
        return []
    evidence_ = []
    if grid is not None:
        evidence_.append(evidence("launch__grid_size", grid, "blocks", f"< {sms} SMs" if small_grid else ""))
    if active is not None:
        evidence_.append(evidence("sm__cycles_active.avg / sm__cycles_elapsed.avg", active * 100, "%",
                                  f"< {SM_ACTIVE_MIN:.0%}"))
    impact = 1 - active if active is not None else 1 - (grid or 0) / sms
    block = k.block_size
    per_sm = resident_blocks_per_sm(k)
    target = TARGET_WAVES * sms
    shape = f" of {block} threads" if block else ""
    advice = [f"Raise the grid to at least {TARGET_WAVES} waves over {sms} SMs (>= {target} blocks{shape}): give "
              "each block less work (fewer elements per thread), or split the reduction dimension across blocks "
              "(split-K) and combine the partial results."]
    if per_sm and per_sm > 1:
        advice.append(f"{per_sm} blocks fit on each SM at this block size, so one full wave is {per_sm * sms} "
                      "blocks; grids that are a multiple of that leave no half-empty last wave.")
    if grid and block and grid < sms:
        advice.append(f"If the problem really has only {grid * block} threads of work, give each thread less (more "
                      "threads in all), or run it alongside independent work: fused into a neighbouring kernel or "
                      "on another stream.")
    theoretical = k.get(THEORETICAL_OCCUPANCY_PCT)
    if theoretical is not None:
        evidence_.append(evidence(THEORETICAL_OCCUPANCY_PCT, theoretical, "%"))
    busy = f", the average SM busy {active:.0%} of the time" if active is not None else ""
    return [finding(
        "low_parallelism", f"Too little parallelism: {grid if grid is not None else 'the'} blocks for {sms} SMs{busy}",
        impact=impact,
        explanation=(f"The grid is too small to occupy the GPU: most of the {sms} SMs have no block to run, so "
                     "the kernel uses a small fraction of the machine no matter how efficient each block is. "
                     "More, smaller blocks are the fix, not faster code inside a block."),
        advice=advice, evidence=evidence_)]
