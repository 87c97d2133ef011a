"""atomic_contention: many atomic updates target few addresses and serialise in one L2 slice."""

from __future__ import annotations

from kernelpro.profiling.diagnosers.signals import (
    busiest_pct,
    evidence,
    finding,
    pct,
    ratio,
    stall_share,
    total,
)
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

HOT_SLICE = "lts__d_atomic_input_cycles_active.max.pct_of_peak_sustained_elapsed"
AVERAGE_SLICE = "lts__d_atomic_input_cycles_active.avg.pct_of_peak_sustained_elapsed"
# One L2 slice's atomic unit busy half the time while the average slice is 8x less busy: the updates
# converge on few addresses (the plant: 99.8 % on one slice against 1.1 % on average).
HOT_SLICE_PCT = 50.0
SLICE_IMBALANCE = 8.0
# Without slice data: the LSU queue full of pending atomics (lg_throttle) or draining them at exit, for at
# least this share of stall cycles, with atomics at least half of the global-memory requests.
ATOMIC_STALL_SHARE = 0.4
ATOMIC_REQUEST_SHARE = 0.5

_ATOMIC_REQUESTS = ("l1tex__t_requests_pipe_lsu_mem_global_op_red.sum",
                    "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum")
_ALL_REQUESTS = _ATOMIC_REQUESTS + ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                                    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")


def diagnose_atomic_contention(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    atomics = total(k, *_ATOMIC_REQUESTS)
    if not atomics:
        return []
    hot, average = k.get(HOT_SLICE), k.get(AVERAGE_SLICE)
    throttled = stall_share(k, "lg_throttle", "drain")
    atomic_share = ratio(atomics, total(k, *_ALL_REQUESTS)) or 0.0
    one_slice = hot is not None and hot >= HOT_SLICE_PCT and hot >= SLICE_IMBALANCE * max(average or 0.0, 0.01)
    queued = throttled is not None and throttled >= ATOMIC_STALL_SHARE and atomic_share >= ATOMIC_REQUEST_SHARE
    if not (one_slice or queued):
        return []
    busiest = busiest_pct(k) or 0.0
    evidence_ = []  # the deciding signal first
    if hot is not None:
        evidence_.append(evidence(HOT_SLICE, hot, "%", f">= {HOT_SLICE_PCT:.0f} % and {SLICE_IMBALANCE:.0f}x avg"))
    if average is not None:
        evidence_.append(evidence(AVERAGE_SLICE, average, "%"))
    if throttled is not None:
        evidence_.insert(0 if not one_slice else len(evidence_),
                         evidence("stall share: lg_throttle + drain", throttled * 100, "%",
                                  f">= {ATOMIC_STALL_SHARE:.0%}"))
    evidence_.append(evidence("global atomic requests (red + atom)", atomics, "requests",
                              f"atomics {atomic_share:.0%} of global requests"))
    sectors = ratio(total(k, "lts__t_sectors_srcunit_tex_op_red.sum", "lts__t_sectors_srcunit_tex_op_atom.sum"),
                    total(k, "lts__t_requests_srcunit_tex_op_red.sum", "lts__t_requests_srcunit_tex_op_atom.sum"))
    where = (f"one L2 slice's atomic unit is busy {pct(hot)} of the time while the average slice is at "
             f"{pct(average or 0.0)}" if one_slice and hot is not None else
             f"warps stall {throttled:.0%} of the time on the queue of pending atomics")
    narrow = " and each request lands in a single 32-byte sector" if sectors is not None and sectors <= 1.0 else ""
    return [finding(
        "atomic_contention", f"Atomic contention: updates serialise on few addresses ({where.split(' while')[0]})",
        impact=(1 - busiest / 100) * max(throttled or 0.0, (hot or 0.0) / 100),
        explanation=(f"Atomic updates from the whole grid converge on a few addresses{narrow}; atomics to one "
                     f"address are applied one at a time by the L2 slice that owns it, so {where}. The rest of the "
                     "GPU idles behind that single queue."),
        advice=["Aggregate before going to global memory: reduce within the warp first (__reduce_add_sync, or "
                "__shfl_xor_sync for floats), then within the block in shared memory, and issue one global atomic "
                "per block.",
                "Privatise: give each block (or warp) its own copy of the counters in shared memory and merge the "
                "copies at the end, or write partial results and reduce them in a second pass.",
                "If several counters share a 32-byte sector, pad them to separate 128-byte lines so different L2 "
                "slices share the load."],
        evidence=evidence_)]
