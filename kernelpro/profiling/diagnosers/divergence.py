"""warp_divergence: lanes of a warp take different paths, so each instruction does part of a warp's work."""

from __future__ import annotations

import math

from kernelpro.profiling.diagnosers.signals import ISSUE_PCT, SM_PCT, evidence, finding
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"
PRED_ON_PER_INST = "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"
# Fewer than 28 of 32 lanes active per instruction on average: an eighth of the issue slots lost. Loop tails
# and boundary checks keep converged kernels at 30-32; a half-warp split reads 16. (Branch-uniformity
# percentages miss half-warp splits, so they are not used.)
THREADS_PER_INST_MIN = 28.0
# Without issue data, assume half the time is spent issuing.
DEFAULT_ISSUE_SHARE = 0.5


def diagnose_warp_divergence(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    threads = k.get(THREADS_PER_INST)
    if threads is None:
        return []
    block = k.block_size
    full = 32.0  # a block whose size is not a multiple of 32 has a partial last warp: that is not divergence
    if block and block % 32:
        full = block / math.ceil(block / 32)
    if threads >= min(THREADS_PER_INST_MIN, full - 1):
        return []
    lost = 1 - threads / full
    issue = k.get(ISSUE_PCT, k.get(SM_PCT))
    evidence_ = [evidence(THREADS_PER_INST, threads, "threads", f"< {THREADS_PER_INST_MIN:.0f} of {full:.0f}")]
    if PRED_ON_PER_INST in k.values:
        evidence_.append(evidence(PRED_ON_PER_INST, k.values[PRED_ON_PER_INST], "threads"))
    if issue is not None:
        evidence_.append(evidence(ISSUE_PCT if ISSUE_PCT in k.values else SM_PCT, issue, "%"))
    split = " (a half-warp split)" if 14 <= threads <= 18 else ""
    return [finding(
        "warp_divergence", f"Warp divergence: {threads:.0f} of {full:.0f} lanes active per instruction{split}",
        impact=lost * (issue / 100 if issue is not None else DEFAULT_ISSUE_SHARE),
        explanation=(f"On average only {threads:.0f} lanes of each warp execute an instruction: lanes of the "
                     "same warp take different branches, and the warp runs each path in turn with the other lanes "
                     f"masked off. {lost:.0%} of the issued work is wasted, so the pipes look busy while doing "
                     "less useful math."),
        advice=["Make branch conditions uniform per warp: decide on the warp index (threadIdx.x / 32), not on the "
                "lane, so whole warps take one path.",
                "Sort or bin the work so neighbouring threads follow the same path (e.g. group elements by case "
                "before the kernel).",
                "When both paths are short, compute both and select (cond ? a : b) branch-free; for data-dependent "
                "loop counts, give each warp work of similar length."],
        evidence=evidence_)]
