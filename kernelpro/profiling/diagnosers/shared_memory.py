"""smem_bank_conflicts: lanes of a warp hit the same shared-memory bank and are served one after another."""

from __future__ import annotations

from kernelpro.profiling.diagnosers.signals import L1_PCT, evidence, finding, ratio, stall_share, total
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

# A quarter of all shared-memory wavefronts being conflict replays is a real cost; conflict-free kernels stay
# under 5 % (the padded transpose: 4 %, 16-byte stores and LDSM show a few stray replays).
CONFLICT_SHARE_MIN = 0.25
# The shared-memory pipe must matter: at least this share of stalls waiting on it (MIO queue full, or a
# shared load's result), else conflicts cost little.
SHARED_PRESSURE_MIN = 0.1

_CONFLICTS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
_WAVEFRONTS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
               "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")


def diagnose_smem_bank_conflicts(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    conflicts, wavefronts = total(k, *_CONFLICTS), total(k, *_WAVEFRONTS)
    share = ratio(conflicts, wavefronts)
    if share is None or share < CONFLICT_SHARE_MIN:
        return []
    pressure = stall_share(k, "mio_throttle", "short_scoreboard")
    if pressure is None and L1_PCT in k.values:
        pressure = k.values[L1_PCT] / 100
    if pressure is not None and pressure < SHARED_PRESSURE_MIN:
        return []
    ways = _ways(k)
    evidence_ = [evidence("bank conflicts / shared wavefronts", share * 100, "%", f">= {CONFLICT_SHARE_MIN:.0%}")]
    if ways:
        evidence_.append(evidence("shared wavefronts per shared instruction", ways, "", "ideal 1"))
    if pressure is not None:
        evidence_.append(evidence("stall share: mio_throttle + short_scoreboard", pressure * 100, "%",
                                  f">= {SHARED_PRESSURE_MIN:.0%}"))
    way_text = f"{ways:.0f}-way " if ways and ways >= 2 else ""
    advice = []
    if ways and ways >= 2:
        advice.append(f"A {way_text}conflict usually means lanes walk down a column of a tile whose rows are a "
                      "multiple of 32 words (128 bytes) long. Pad each row by one element: for a 32x32 float "
                      "tile, declare it [32][33], and every lane of a column read lands in a different bank.")
    advice += ["Or swizzle instead of padding: store element (r, c) at column c ^ (r % 32) (CuTe's Swizzle does "
               "this for GEMM tiles), which keeps 16-byte vector accesses aligned.",
               "For 8- or 16-byte elements, pad by one element too, or use ldmatrix (LDSM) for MMA operands."]
    return [finding(
        "smem_bank_conflicts", f"Shared-memory bank conflicts: {way_text}replays, {share:.0%} of shared wavefronts",
        impact=share * (pressure if pressure is not None else 0.5),
        explanation=("Shared memory serves 32 banks of 4 bytes per cycle; when several lanes of a warp address "
                     "different words in the same bank, the access is split into that many wavefronts. Here "
                     f"{share:.0%} of the shared-memory pipe's work is such replays, and warps queue behind it."),
        advice=advice, evidence=evidence_)]


def _ways(k: KernelMetrics) -> float | None:
    """Wavefronts per shared load (or store, if there are no loads): 1 when conflict-free, 32 at worst."""
    for op in ("ld", "st"):
        per_instruction = ratio(k.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"),
                                k.get(f"smsp__sass_inst_executed_op_shared_{op}.sum"))
        if per_instruction:
            return per_instruction
    return None
