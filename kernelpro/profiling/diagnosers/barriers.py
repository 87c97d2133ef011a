"""barrier_stalls: warps wait at __syncthreads for the slowest warp of their block."""

from __future__ import annotations

from kernelpro.profiling.diagnosers.signals import (
    BUSY_PCT,
    busiest_pct,
    evidence,
    finding,
    is_short,
    pct,
    stall_share,
)
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

# Barrier waits above 40 % of stall cycles dominate; tiled kernels with one barrier per tile sit at 15-25 %
# (the transpose plants: 19-21 %, the wmma GEMM: 18 %).
BARRIER_SHARE_MIN = 0.4


def diagnose_barrier_stalls(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    share, busiest = stall_share(k, "barrier"), busiest_pct(k)
    if share is None or share < BARRIER_SHARE_MIN or is_short(k) or (busiest is not None and busiest >= BUSY_PCT):
        return []
    block = k.block_size
    warps = (block + 31) // 32 if block else None
    evidence_ = [evidence("stall share: barrier", share * 100, "%", f">= {BARRIER_SHARE_MIN:.0%}")]
    if busiest is not None:
        evidence_.append(evidence("busiest unit (SM or memory)", busiest, "%", f"< {BUSY_PCT:.0f} %"))
    if block:
        evidence_.append(evidence("launch__block_size", block, "threads"))
    advice = ["Balance the work between barriers: every warp should do a similar amount, or the rest of the "
              "block idles until the slowest arrives."]
    if warps and warps > 8:
        advice.append(f"Each barrier here waits for {warps} warps; smaller blocks (256 threads, 8 warps) wait for "
                      "fewer, and the SM can run other blocks meanwhile.")
    advice += ["Exchange data within a warp with shuffles and __syncwarp instead of a block-wide barrier.",
               "Split producers and consumers with named barriers or cuda::barrier arrive/wait, and double-buffer "
               "shared tiles so one barrier per tile suffices."]
    return [finding(
        "barrier_stalls", f"Barrier stalls: {share:.0%} of warp stall cycles are spent waiting at __syncthreads",
        impact=share * (1 - (busiest or 0) / 100),
        explanation=(f"Most warps are parked at a block-wide barrier waiting for the slowest warp of their block, "
                     f"so the SM has little to issue{f' (busiest unit at {pct(busiest)})' if busiest else ''}. "
                     "The work between barriers is unevenly spread across warps, or the barriers are too frequent "
                     "for the work they separate."),
        advice=advice, evidence=evidence_)]
