"""The roofs a kernel can be near (compute at its precision, DRAM, L2, L1/shared memory), the nearest one, and
what an engineer does about each.

Stage 1 names a class; this names the roof and the distance from it, so every kernel gets a position and a lever
even when no stage-2 diagnoser explains it ("near 80% of the L1 roof: tile in registers", not "no bottleneck").
"""

from __future__ import annotations

from kernelpro.profiling.diagnosers.compute import hottest_math_pipe
from kernelpro.profiling.diagnosers.signals import BUSY_PCT, pct
from kernelpro.profiling.metrics import KernelMetrics

ROOF_LABELS = {"compute": "the {precision} compute roof", "dram": "DRAM bandwidth", "l2": "L2 bandwidth",
               "l1": "L1/shared-memory bandwidth"}

ROOF_ADVICE: dict[str, list[str]] = {
    "compute": ["Do less math per result: hoist loop-invariant work, reuse partial results, use the fast "
                "intrinsics where accuracy allows.",
                "Move the work to a faster unit: a matrix product or convolution belongs on the tensor cores "
                "(mma.sync/WGMMA through CUTLASS or CuTe); half precision on the CUDA cores packs two results per "
                "instruction (HFMA2)."],
    "dram": ["Move fewer bytes: fuse with the producer or consumer kernel so intermediates never reach DRAM.",
             "Store in a narrower type (bf16/fp16, int8 where accuracy allows) and read each input once."],
    "l2": ["Reuse more per L2 read: larger block tiles staged in shared memory, more outputs per thread held in "
           "registers.",
           "Vectorise global accesses (16-byte loads); thread-block clusters can share one tile across SMs."],
    "l1": ["Tile in registers: each thread computes a 4x4 to 8x8 micro-tile, so an operand loaded from shared "
           "memory feeds several FMAs instead of one.",
           "Load shared memory in 16-byte vectors (LDS.128) or with ldmatrix, and stage fewer round trips "
           "through it; for a matrix product, feed the tensor cores from shared memory instead."],
}


def roof_levels(k: KernelMetrics, compute_fraction: float | None, throughput_pct: dict[str, float]
                ) -> dict[str, float]:
    """Each roof's level, % of its peak: compute from the classic roofline or the busiest math pipe (whichever
    is higher), the memory levels from ncu's speed of light."""
    levels: dict[str, float] = {}
    compute = [100 * compute_fraction] if compute_fraction is not None else []
    if (hottest := hottest_math_pipe(k)) is not None:
        compute.append(hottest[2])
    if compute:
        levels["compute"] = max(compute)
    for unit in ("dram", "l2", "l1"):
        if unit in throughput_pct:
            levels[unit] = throughput_pct[unit]
    return levels


def nearest(levels: dict[str, float]) -> tuple[str, float] | None:
    """(roof, % of its peak) of the roof the kernel is closest to."""
    return max(levels.items(), key=lambda item: item[1]) if levels else None


def describe(roof: str, level: float, precision: str) -> str:
    label = ROOF_LABELS[roof].format(precision=precision)
    return f"Nearest roof: {label} at {pct(level)} of peak ({pct(max(0.0, 100 - level))} from it)."


def advice_for(roof: str, level: float) -> list[str]:
    """What to do about the roof a kernel is near (from ``BUSY_PCT`` of its peak); nothing when it is far."""
    return list(ROOF_ADVICE[roof]) if level >= BUSY_PCT else []
