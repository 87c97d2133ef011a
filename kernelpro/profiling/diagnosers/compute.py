"""compute_bound: one math pipe is near its peak; only fewer or cheaper instructions make the kernel faster."""

from __future__ import annotations

from kernelpro.profiling.diagnosers.signals import BUSY_PCT, ISSUE_PCT, SM_PCT, evidence, finding, pct
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

# Math pipes only: a high sm__throughput from load/store issue (a transpose at 65 %) is memory work, not compute.
_PIPES: dict[str, tuple[str, str]] = {
    "FP32 FMA": ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
                 "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed"),
    "ALU": ("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_elapsed"),
    "FP64": ("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed",
             "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_elapsed"),
    "tensor": ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    "XU": ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed",
           "sm__pipe_xu_cycles_active.avg.pct_of_peak_sustained_elapsed"),
}

_ADVICE = {
    "FP32 FMA": ["If the inner loop is a matrix product or convolution, move it to the tensor cores (mma.sync / "
                 "WGMMA through CUTLASS or CuTe): 8-15x the FP32 rate.",
                 "For fp16/bf16 data use packed half2/bfloat162 math (HFMA2): two results per instruction.",
                 "Remove redundant work: hoist loop-invariant math, reuse partial results, use --use_fast_math "
                 "where accuracy allows."],
    "ALU": ["Integer and logic instructions dominate: precompute indices outside the loop, use 32-bit instead of "
            "64-bit index math, replace division and modulo by constants with shifts and masks.",
            "Check for conversions (F2I/I2F) and comparisons that a different data layout would remove."],
    "FP64": ["Use FP32 (or mixed precision with FP32 accumulation) if accuracy allows: twice the FP64 peak.",
             "For FP64 matrix products use the DMMA tensor cores (cuBLAS/CUTLASS), twice the FP64 FMA rate."],
    "tensor": ["The tensor cores are the limit: use a narrower type (fp8 doubles the bf16 rate) or skip work "
               "(structured sparsity, causal masking of whole tiles).",
               "Make sure no non-tensor work is serialised with the MMAs: overlap the epilogue with the next tile."],
    "XU": ["Transcendentals dominate: use the fast intrinsics (__expf, __sinf, rsqrtf), exp2f with a pre-scaled "
           "argument, or a short polynomial that runs on the FMA pipe instead of the XU."],
}


def hottest_math_pipe(k: KernelMetrics) -> tuple[str, str, float] | None:
    """(pipe, metric, % of peak over elapsed time) of the busiest math pipe."""
    readings = [(pipe, metric, k.values[metric]) for pipe, names in _PIPES.items()
                for metric in names if metric in k.values]
    best: dict[str, tuple[str, str, float]] = {}
    for pipe, metric, value in readings:  # first collected name per pipe wins
        best.setdefault(pipe, (pipe, metric, value))
    return max(best.values(), key=lambda reading: reading[2]) if best else None


def diagnose_compute_bound(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    hottest = hottest_math_pipe(k)
    if hottest is None or hottest[2] < BUSY_PCT:
        return []
    pipe, metric, busy = hottest
    evidence_ = [evidence(metric, busy, "%", f">= {BUSY_PCT:.0f} %")]
    for name in (SM_PCT, ISSUE_PCT):
        if name in k.values:
            evidence_.append(evidence(name, k.values[name], "%"))
    return [finding(
        "compute_bound", f"Compute-bound: the {pipe} pipe is busy {pct(busy)} of the time",
        impact=1 - busy / 100, detail=pipe, severity="medium",
        explanation=(f"The {pipe} pipe is close to its peak rate, so the SMs cannot issue this work any faster. "
                     "Memory tuning will not help; the kernel gets faster only with fewer instructions per result "
                     "or by moving the work to a faster unit."),
        advice=_ADVICE[pipe], evidence=evidence_)]
