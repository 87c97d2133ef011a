"""memory_bound: DRAM (or L2) bandwidth sets the pace; only moving fewer bytes makes the kernel faster."""

from __future__ import annotations

from kernelpro.profiling.diagnosers.signals import (
    BUSY_PCT,
    DRAM_PCT,
    L2_PCT,
    SM_PCT,
    dram_pct,
    evidence,
    finding,
    pct,
    total,
)
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

# L2 alone must be busier than DRAM's threshold to be the limit: L2 has more headroom per byte than HBM, and
# a tiled GEMM sits at ~70 % L2 while healthy (the healthy_wmma_gemm control: 73 %).
L2_BOUND_PCT = 80.0

_LOCAL = ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum")
_GLOBAL = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")


def diagnose_memory_bound(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    dram = dram_pct(k)
    if dram is not None and dram >= BUSY_PCT:
        return [_dram_bound(k, gpu, dram)]
    l2 = k.get(L2_PCT)
    local, global_ = total(k, *_LOCAL) or 0.0, total(k, *_GLOBAL) or 0.0
    if l2 is not None and l2 >= L2_BOUND_PCT and local <= global_:  # spill traffic is register_spills' to explain
        return [_l2_bound(k, l2)]
    return []


def _dram_bound(k: KernelMetrics, gpu: GpuSpecs, dram: float) -> Finding:
    moved = total(k, "dram__bytes_read.sum", "dram__bytes_write.sum")
    seconds = (k.duration_ns or 0) * 1e-9
    achieved = f"{moved / seconds / 1e9:,.0f} GB/s of {gpu.memory_bandwidth_gbs:,.0f}" if moved and seconds else ""
    evidence_ = [evidence(DRAM_PCT, dram, "%", f">= {BUSY_PCT:.0f} %")]
    if k.get(SM_PCT) is not None:
        evidence_.append(evidence(SM_PCT, k.values[SM_PCT], "%"))
    if moved:
        evidence_.append(evidence("dram__bytes_read.sum + dram__bytes_write.sum", moved, "byte"))
    return finding(
        "memory_bound", f"Memory-bound: DRAM at {pct(dram)} of peak" + (f" ({achieved})" if achieved else ""),
        impact=1 - dram / 100, detail="dram", severity="medium",
        explanation=(f"DRAM bandwidth is the limit: HBM is busy {pct(dram)} of the time while the SMs are mostly "
                     "waiting for data. Tuning instructions or occupancy will not help; the kernel gets faster "
                     "only by moving fewer bytes."),
        advice=["Fuse this kernel with its producer or consumer so intermediates stay in registers or shared "
                "memory instead of a DRAM round trip.",
                "Store data in a narrower type (bf16/fp16 instead of fp32, int8 where accuracy allows): half "
                "the bytes is up to half the time.",
                "Read each input once: reuse tiles from shared memory across a block instead of re-reading "
                "them from global memory, and avoid re-materialising broadcast tensors."],
        evidence=evidence_)


def _l2_bound(k: KernelMetrics, l2: float) -> Finding:
    hit = k.get("lts__t_sector_hit_rate.pct")
    evidence_ = [evidence(L2_PCT, l2, "%", f">= {L2_BOUND_PCT:.0f} %")]
    if dram_pct(k) is not None:
        evidence_.append(evidence(DRAM_PCT, dram_pct(k) or 0.0, "%", f"< {BUSY_PCT:.0f} %"))
    if hit is not None:
        evidence_.append(evidence("lts__t_sector_hit_rate.pct", hit, "%"))
    return finding(
        "memory_bound", f"L2-bandwidth-bound: L2 at {pct(l2)} of peak, DRAM mostly idle",
        impact=1 - l2 / 100, detail="l2", severity="medium",
        explanation=("The data fits in L2, so DRAM is idle, but the L2 itself is saturated: every block "
                     "re-reads the same data from L2 instead of keeping it closer to the SM."),
        advice=["Reuse more per load: larger block tiles staged in shared memory, or more outputs per thread "
                "held in registers, cut L2 reads in proportion.",
                "Vectorise global accesses (16-byte loads) and avoid reading the same line from many blocks at "
                "once; thread-block clusters with distributed shared memory can share a tile across SMs."],
        evidence=evidence_)
