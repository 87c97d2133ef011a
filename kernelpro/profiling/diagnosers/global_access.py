"""uncoalesced_global: warp accesses touch many 32-byte sectors and use a small part of each."""

from __future__ import annotations

import math

from kernelpro.profiling.diagnosers.signals import L2_PCT, busiest_pct, dram_pct, evidence, finding, total
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

SECTOR_BYTES = 32
# Under half of each fetched sector used means at least 2x the necessary traffic (ncu's uncoalesced-access
# rule reports the same waste as "excessive sectors").
SECTOR_USE_MIN_BYTES = 16.0
# A request may touch 4 sectors (one 128-byte line) for 4-byte lanes; beyond that the lanes are spread out. A
# request touching a single sector (all lanes on one address, as in a pointer chase) is a scalar load, not
# an uncoalesced one.
SECTORS_PER_REQUEST_MIN = 4.0
# Fallback without per-instruction byte counts: ncu's own excessive-sector estimate. Set above the 33 % that
# cp.async-fed GEMMs show from ncu's ideal model (the healthy_wmma_gemm control).
EXCESSIVE_SHARE_MIN = 0.5

_OPS = {"load": "ld", "store": "st"}


def diagnose_uncoalesced_global(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    all_sectors = total(k, *(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum" for op in _OPS.values()))
    memory_busy = max(v for v in (dram_pct(k), k.get(L2_PCT), busiest_pct(k), 0.0) if v is not None) / 100
    findings = []
    for kind, op in _OPS.items():
        sectors = k.get(f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum")
        requests = k.get(f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum")
        used = k.get(f"smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.ratio")
        if not sectors or not requests or not used or not all_sectors:
            continue
        per_request = sectors / requests
        if used >= SECTOR_USE_MIN_BYTES or per_request <= SECTORS_PER_REQUEST_MIN:
            continue
        waste = 1 - used / SECTOR_BYTES
        ideal = max(1, math.ceil(per_request * used / SECTOR_BYTES))
        findings.append(_finding(kind, per_request, used, ideal, waste, waste * sectors / all_sectors * memory_busy,
                                 [evidence(f"l1tex__t_sectors/requests_pipe_lsu_mem_global_op_{op}", per_request,
                                           "sectors/request", f"> {SECTORS_PER_REQUEST_MIN:.0f}, ideal {ideal}"),
                                  evidence(f"smsp__sass_average_data_bytes_per_sector_mem_global_op_{op}.ratio",
                                           used, "bytes/sector", f"< {SECTOR_USE_MIN_BYTES:.0f} of 32")]))
    if findings:
        return [max(findings, key=lambda f: f.impact)]
    return _from_excessive_sectors(k, memory_busy)


def _finding(kind: str, per_request: float, used: float, ideal: int, waste: float, impact: float,
             evidence_: list) -> Finding:
    return finding(
        "uncoalesced_global", f"Uncoalesced global {kind}s: {per_request:.0f} sectors per request where {ideal} "
        f"would do, {waste:.0%} of the bytes moved unused",
        impact=impact, detail=kind,
        explanation=(f"Each warp {kind} touches {per_request:.0f} different 32-byte sectors but uses only "
                     f"{used:.0f} bytes of each, so the memory system moves {1 / (1 - waste):.0f}x the data the "
                     "kernel needs. Consecutive lanes are reading addresses far apart (a strided or "
                     "column-wise access), and DRAM bandwidth is spent on bytes nobody uses."),
        advice=[f"Make consecutive threads access consecutive addresses (threadIdx.x on the fastest-varying "
                f"index) so a warp's {kind} covers {ideal} sector{'s' if ideal > 1 else ''}.",
                "If the access must be strided (a transpose, a column of a row-major matrix), stage a tile through "
                "shared memory: read it coalesced, then access it in the other order from shared memory.",
                "For arrays of structs read field by field, switch to a struct of arrays or load whole structs "
                "as 16-byte vectors."],
        evidence=evidence_)


def _from_excessive_sectors(k: KernelMetrics, memory_busy: float) -> list[Finding]:
    excessive = k.get("derived__memory_l2_theoretical_sectors_global_excessive")
    sectors = k.get("memory_l2_theoretical_sectors_global")
    if excessive is None or not sectors or excessive / sectors < EXCESSIVE_SHARE_MIN:
        return []
    share = excessive / sectors
    return [finding(
        "uncoalesced_global", f"Uncoalesced global accesses: {share:.0%} of the sectors requested are excessive",
        impact=share * memory_busy, detail="access",
        explanation=("Warp accesses spread over more 32-byte sectors than their data needs, so the memory system "
                     f"moves about {1 / (1 - share):.0f}x the bytes the kernel uses."),
        advice=["Make consecutive threads access consecutive addresses, or stage strided accesses through shared "
                "memory so global memory is read and written in contiguous runs."],
        evidence=[evidence("derived__memory_l2_theoretical_sectors_global_excessive / theoretical", share * 100,
                           "%", f">= {EXCESSIVE_SHARE_MIN:.0%}")])]
