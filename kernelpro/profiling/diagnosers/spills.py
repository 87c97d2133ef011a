"""register_spills: values that do not fit in registers go to local memory, a round trip through L1/L2."""

from __future__ import annotations

from kernelpro.profiling.diagnosers.signals import REGISTERS, evidence, finding, stall_share, total
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.occupancy import theoretical_occupancy

# Local memory must carry at least a tenth of the L1 sectors to matter: a few spilled values outside the hot
# loop are normal for large kernels, and ptxas's stack for calls shows up as a trickle.
LOCAL_SHARE_MIN = 0.1
# Without stall data, assume half the local traffic's latency is exposed.
DEFAULT_EXPOSED = 0.5

_LOCAL = ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum")
_GLOBAL = ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
_SPILL_INSTRUCTIONS = "sass__inst_executed_register_spilling"


def diagnose_register_spills(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    local, global_ = total(k, *_LOCAL), total(k, *_GLOBAL) or 0.0
    if not local:
        return []
    share = local / (local + global_)
    if share < LOCAL_SHARE_MIN:
        return []
    spilled = k.get(_SPILL_INSTRUCTIONS)
    detail = "local arrays" if spilled == 0 else "spills"
    exposed = stall_share(k, "lg_throttle", "long_scoreboard")
    registers = int(k.get(REGISTERS) or 0)
    evidence_ = [evidence("local sectors / (local + global) at L1", share * 100, "%", f">= {LOCAL_SHARE_MIN:.0%}"),
                 evidence("l1tex__t_sectors_pipe_lsu_mem_local_op_{ld,st}.sum", local, "sectors")]
    if spilled:
        evidence_.append(evidence(_SPILL_INSTRUCTIONS, spilled, "inst"))
    if registers:
        evidence_.append(evidence(REGISTERS, registers, "registers"))
    if exposed is not None:
        evidence_.append(evidence("stall share: lg_throttle + long_scoreboard", exposed * 100, "%"))
    if detail == "spills":
        explanation = (f"The compiler ran out of registers{f' at {registers} per thread' if registers else ''} and "
                       "keeps part of the working set in local memory: every spilled value is a store and a "
                       "reload through L1 and often L2. Here local traffic is "
                       f"{share:.0%} of the L1 sectors, so the loop waits on its own spills.")
        advice = _register_advice(k, gpu, registers)
    else:
        explanation = ("Per-thread arrays indexed with values the compiler cannot resolve live in local memory, "
                       f"not registers: local traffic is {share:.0%} of the L1 sectors.")
        advice = ["Index per-thread arrays only with compile-time constants (fully unrolled loops) so they stay "
                  "in registers, or move the array to shared memory."]
    return [finding("register_spills", f"Register spills: local memory carries {share:.0%} of L1 traffic",
                    impact=share * (exposed if exposed is not None else DEFAULT_EXPOSED), detail=detail,
                    explanation=explanation, advice=advice, evidence=evidence_)]


def _register_advice(k: KernelMetrics, gpu: GpuSpecs, registers: int) -> list[str]:
    advice = []
    block = k.block_size
    if registers and block:
        options = []
        for cap in sorted({min(2 * registers, 255), min(4 * registers, 255)}):
            try:
                occ = theoretical_occupancy(gpu, block, cap)
            except ValueError:
                continue
            options.append(f"at {cap} registers {occ.blocks_per_sm} blocks of {block} threads still fit "
                           f"({occ.fraction:.0%} occupancy)")
        if options:
            advice.append(f"Raise the register cap (-maxrregcount or the minBlocks of __launch_bounds__): "
                          f"{'; '.join(options)}.")
    advice += ["Shrink the live set: fewer accumulators or a smaller tile per thread, recompute cheap values "
               "instead of keeping them, and split long-lived arrays across threads with warp shuffles.",
               "Check `ptxas -v` (or the cubin's resource usage) for 'bytes spill stores' after each change."]
    return advice
