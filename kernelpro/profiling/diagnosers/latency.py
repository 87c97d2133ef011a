"""memory_latency_bound: warps wait on memory loads while neither DRAM nor the SMs are busy."""

from __future__ import annotations

from kernelpro.profiling.diagnosers.signals import (
    ACHIEVED_OCCUPANCY_PCT,
    BUSY_PCT,
    DRAM_PCT,
    ISSUE_PCT,
    busiest_pct,
    dram_pct,
    evidence,
    finding,
    is_short,
    pct,
    stall_share,
)
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

# Long-scoreboard (waiting on an L1TEX load: global, local, texture) must be at least half of all stall cycles
# to call the kernel latency-bound on memory; the plants sit at 91-98 %, healthy streaming kernels also show it
# but with DRAM busy, which the BUSY_PCT gate excludes.
LONG_SCOREBOARD_SHARE = 0.5


def diagnose_memory_latency_bound(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    busiest = busiest_pct(k)
    waiting = stall_share(k, "long_scoreboard")
    if busiest is None or waiting is None or busiest >= BUSY_PCT or waiting < LONG_SCOREBOARD_SHARE or is_short(k):
        return []
    dram = dram_pct(k)
    evidence_ = [evidence("stall share: long_scoreboard", waiting * 100, "%", f">= {LONG_SCOREBOARD_SHARE:.0%}"),
                 evidence("busiest unit (SM or memory)", busiest, "%", f"< {BUSY_PCT:.0f} %")]
    for name in (ISSUE_PCT, ACHIEVED_OCCUPANCY_PCT):
        if name in k.values:
            evidence_.append(evidence(name, k.values[name], "%"))
    advice = []
    if dram:
        advice.append(f"DRAM runs at {pct(dram)} of peak: about {100 / max(dram, 1):.1f}x more bytes in flight "
                      "would saturate it. Give each thread several independent loads before it uses any result "
                      "(unroll with separate accumulators, load float4 instead of float).")
        evidence_.append(evidence(DRAM_PCT, dram, "%"))
    advice += ["Prefetch: issue the next iteration's loads (or cp.async into shared memory, double-buffered) "
               "before computing on the current ones.",
               "If each address depends on the previous load (pointer chasing, linked structures), interleave "
               "several independent chains per warp, or change the data structure to something indexable."]
    occupancy = k.get(ACHIEVED_OCCUPANCY_PCT)
    if occupancy is not None and occupancy < 50:
        advice.append(f"Only {pct(occupancy)} of warp slots are filled; more resident warps would also hide "
                      "latency (see occupancy_limited).")
    return [finding(
        "memory_latency_bound", f"Latency-bound on memory: {waiting:.0%} of warp stalls wait for loads, "
        f"busiest unit at {pct(busiest)}",
        impact=waiting * (1 - busiest / 100),
        explanation=("Warps spend most of their time waiting for global-memory loads to return, yet neither "
                     "DRAM nor the SMs are anywhere near busy: too few loads are in flight to cover the memory "
                     "latency. The fix is more independent memory requests in flight, not fewer bytes."),
        advice=advice, evidence=evidence_)]
