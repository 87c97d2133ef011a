"""occupancy_limited: too few warps fit on an SM to hide latency, and which resource keeps them out."""

from __future__ import annotations

from kernelpro.profiling.diagnosers.signals import (
    ACHIEVED_OCCUPANCY_PCT,
    BUSY_PCT,
    ISSUE_PCT,
    REGISTERS,
    THEORETICAL_OCCUPANCY_PCT,
    busiest_pct,
    evidence,
    finding,
    is_short,
    pct,
)
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.occupancy import RESERVED_SMEM_PER_BLOCK, theoretical_occupancy

# At or below half the warp slots a latency-bound kernel usually has too few warps to switch between
# (the mildest plant, 32-thread blocks, sits at exactly 50 %). Above it, ILP is the better lever.
OCCUPANCY_LOW_PCT = 50.0
# The scheduler must be mostly idle: with issue slots busy, more warps would only compete for them
# (a register-tiled GEMM at 25 % occupancy keeps the FMA pipe 75 % busy).
ISSUE_IDLE_PCT = 50.0

# Limit metric -> detail. In a tie the earlier entry binds: the block cap caps the other limits' reports.
_LIMITS = {
    "launch__occupancy_limit_blocks": "blocks per SM",
    "launch__occupancy_limit_registers": "registers",
    "launch__occupancy_limit_shared_mem": "shared memory",
    "launch__occupancy_limit_warps": "warps",
}


def binding_limit(k: KernelMetrics) -> tuple[str, str, int] | None:
    """(metric, detail, blocks per SM) of the limit that sets residency."""
    present = [(metric, detail, int(k.values[metric])) for metric, detail in _LIMITS.items() if metric in k.values]
    return min(present, key=lambda limit: limit[2]) if present else None


def diagnose_occupancy_limited(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    theoretical, busiest, issue = k.get(THEORETICAL_OCCUPANCY_PCT), busiest_pct(k), k.get(ISSUE_PCT)
    if theoretical is None or busiest is None or theoretical > OCCUPANCY_LOW_PCT or busiest >= BUSY_PCT:
        return []
    if (issue is not None and issue >= ISSUE_IDLE_PCT) or is_short(k):
        return []
    limit = binding_limit(k)
    metric, detail, blocks = limit if limit else ("", "unknown", 0)
    block = k.block_size or 0
    evidence_ = [evidence(THEORETICAL_OCCUPANCY_PCT, theoretical, "%", f"<= {OCCUPANCY_LOW_PCT:.0f} %"),
                 evidence("busiest unit (SM or memory)", busiest, "%", f"< {BUSY_PCT:.0f} %")]
    if limit:
        evidence_.append(evidence(metric, blocks, "blocks/SM", "the lowest limit"))
    for name in (ACHIEVED_OCCUPANCY_PCT, ISSUE_PCT):
        if name in k.values:
            evidence_.append(evidence(name, k.values[name], "%"))
    advice = _advice(k, gpu, detail, blocks, block)
    return [finding(
        "occupancy_limited", f"Occupancy-limited by {detail}: {pct(theoretical)} of warp slots can be filled",
        impact=(1 - theoretical / 100) * (1 - busiest / 100), detail=detail,
        explanation=(f"Only {blocks} blocks of {block} threads fit on an SM because of the {detail} limit, so each "
                     "scheduler has few warps to switch to while the others wait on memory. The units are idle "
                     f"(busiest at {pct(busiest)}) because latency is not hidden; more resident warps is the "
                     "direct fix."),
        advice=advice, evidence=evidence_)]


def _advice(k: KernelMetrics, gpu: GpuSpecs, detail: str, blocks: int, block: int) -> list[str]:
    registers = int(k.get(REGISTERS) or 0)
    smem = int((k.get("launch__shared_mem_per_block_static") or 0) + (k.get("launch__shared_mem_per_block_dynamic")
                                                                      or 0))
    target = max(2 * blocks, 1)
    ilp = ("Or keep occupancy and add independent work per warp instead: several loads in flight per thread "
           "(unrolled loop with separate accumulators) hides latency with fewer warps.")
    if detail == "registers" and block and registers:
        fits = _max_registers_for(gpu, block, target, smem)
        warps = target * ((block + 31) // 32)
        if fits:
            return [f"ptxas uses {registers} registers per thread, so only {blocks} blocks of {block} threads fit "
                    f"in the {gpu.registers_per_sm}-register file. At <= {fits} registers {target} blocks fit "
                    f"({warps} warps): __launch_bounds__({block}, {target}) asks ptxas for that.",
                    "Shrink what stays live across the loop (fewer values per thread, recompute cheap ones, move "
                    "a per-thread table to shared memory) so the lower register count does not spill.", ilp]
    if detail == "shared memory" and smem:
        per_block = gpu.smem_per_sm_bytes // target - RESERVED_SMEM_PER_BLOCK
        return [f"Each block takes {smem / 1024:.0f} KiB of shared memory (+1 KiB reserved) of the "
                f"{gpu.smem_per_sm_bytes // 1024} KiB per SM, so {blocks} fit. Under {per_block / 1024:.0f} KiB per "
                f"block {target} fit: a smaller tile, fewer pipeline stages, or a narrower type in shared memory.",
                "If all blocks stage the same read-only table, read it through L1/constant memory or keep only "
                "the part each block needs.", ilp]
    if detail == "blocks per SM" and block:
        needed = gpu.max_warps_per_sm // gpu.max_blocks_per_sm * 32
        return [f"Blocks of {block} threads hit the {gpu.max_blocks_per_sm}-blocks-per-SM cap at "
                f"{gpu.max_blocks_per_sm * ((block + 31) // 32)} of {gpu.max_warps_per_sm} warps. Use at least "
                f"{needed} threads per block (128 or 256 is typical) with the same total thread count.", ilp]
    if detail == "warps" and block:
        return [f"{block}-thread blocks do not divide the {gpu.max_warps_per_sm} warp slots evenly; a block size "
                "that does (128, 256 or 512 threads) fills them.", ilp]
    return ["Raise the number of resident warps: fewer registers per thread, less shared memory per block, or "
            "larger blocks, whichever binds.", ilp]


def _max_registers_for(gpu: GpuSpecs, block: int, blocks: int, smem: int) -> int | None:
    """The most registers per thread that still lets ``blocks`` blocks reside (multiples of 8, as ptxas rounds)."""
    for registers in range(255 // 8 * 8, 15, -8):
        try:
            if theoretical_occupancy(gpu, block, registers, smem).blocks_per_sm >= blocks:
                return registers
        except ValueError:
            return None
    return None
