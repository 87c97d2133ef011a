"""tensor_cores_unused: a matrix product runs as FP32 FMAs on the CUDA cores while the tensor cores idle."""

from __future__ import annotations

from kernelpro.tools.profiling.diagnosers.signals import evidence, finding, ratio, thread_ops
from kernelpro.tools.profiling.findings import Finding
from kernelpro.tools.profiling.gpu_specs import GpuSpecs
from kernelpro.tools.profiling.metrics import KernelMetrics

FMA_PIPE = ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed")
TENSOR_PIPE = ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active")
SHARED_LOADS = "smsp__sass_inst_executed_op_shared_ld.sum"
# ptxas's HFMA2.MMA register moves show a few % of tensor-pipe activity in pure FP32 kernels: below 5 % the
# tensor cores are idle.
TENSOR_NOISE_PCT = 5.0
# The FMA pipe must carry the kernel (elapsed time, so idle SMs count against it).
FMA_BUSY_PCT = 50.0
# A matrix product reuses each operand loaded from shared memory in several FMAs (register tiling: 16 FFMA per
# LDS.128 in the 8x8 micro-tile plant); a register-only FMA loop has no shared loads at all.
FFMA_PER_SHARED_LOAD_MIN = 4.0

_HALF_OPS = ("hfma", "hadd", "hmul")
# GEMM-shaped: FFMAs are at least this share of the warp instructions (the planted FP32 GEMM: about 0.6).
GEMM_FFMA_SHARE = 0.25


def _ffma_per_shared_load(k: KernelMetrics) -> float | None:
    ffma = thread_ops(k, "ffma")
    return ratio(ffma / 32 if ffma else None, k.get(SHARED_LOADS))


def gemm_shaped(k: KernelMetrics) -> bool:
    """A matrix product on the CUDA cores: FFMAs are a large share of the instructions and each operand loaded
    from shared memory feeds several of them. Whatever the kernel's roofline class."""
    per_load, ffma, issued = _ffma_per_shared_load(k), thread_ops(k, "ffma"), k.get("smsp__inst_executed.sum")
    share = ratio(ffma / 32 if ffma else None, issued)
    return per_load is not None and share is not None and per_load >= FFMA_PER_SHARED_LOAD_MIN \
        and share >= GEMM_FFMA_SHARE


def diagnose_tensor_cores_unused(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    fma, tensor = k.first(*FMA_PIPE), k.first(*TENSOR_PIPE)
    per_load = _ffma_per_shared_load(k)
    if fma is None or tensor is None or per_load is None:
        return []
    # The FMA pipe carries the kernel, or the kernel is GEMM-shaped and held back by feeding the FMAs (a
    # shared-tiled GEMM at 80% of the L1 roof has its FMA pipe below half): either way the tensor cores idle.
    if (fma < FMA_BUSY_PCT and not gemm_shaped(k)) or tensor >= TENSOR_NOISE_PCT or per_load < FFMA_PER_SHARED_LOAD_MIN:
        return []
    half_data = any((thread_ops(k, op) or 0) > 0 for op in _HALF_OPS)
    precision = "fp16_tensor" if half_data else "tf32_tensor"
    fp32_peak, tensor_peak = gpu.peak_tflops.get("fp32"), gpu.peak_tflops.get(precision)
    speedup = tensor_peak / fp32_peak if tensor_peak and fp32_peak else None
    rate = f" ({tensor_peak:.0f} against {fp32_peak:.0f} TFLOP/s)" if speedup else ""
    evidence_ = [evidence(FMA_PIPE[0] if FMA_PIPE[0] in k.values else FMA_PIPE[1], fma, "%",
                          f">= {FMA_BUSY_PCT:.0f} %"),
                 evidence(TENSOR_PIPE[0] if TENSOR_PIPE[0] in k.values else TENSOR_PIPE[1], tensor, "%",
                          f"< {TENSOR_NOISE_PCT:.0f} % (noise)"),
                 evidence("FFMA warp instructions per shared load", per_load, "", f">= {FFMA_PER_SHARED_LOAD_MIN:.0f}")]
    if half_data:
        advice = [f"The data is already half precision (HADD2/HFMA2 conversions in the kernel): feed it to the "
                  f"tensor cores directly with fp32 accumulation (nvcuda::wmma, mma.sync, or WGMMA through "
                  f"CUTLASS/CuTe){rate}."]
    else:
        advice = [f"Use TF32 tensor cores for the FP32 product (wmma with precision::tf32, or cuBLAS/CUTLASS with "
                  f"TF32){rate}, if a 10-bit mantissa is acceptable; 3xTF32 keeps FP32 accuracy at a third of "
                  "that rate.",
                  "Or convert operands to bf16/fp16 with fp32 accumulation: twice the TF32 rate."]
    advice += ["Keep the tiling you have: 128x128 block tiles staged in shared memory map directly onto warp-level "
               "MMA tiles (e.g. 64x32 per warp of 16x16 fragments); load fragments with ldmatrix from padded or "
               "swizzled shared memory."]
    return [finding(
        "tensor_cores_unused", "Tensor cores unused: a matrix product runs as FP32 FMAs "
        f"(FMA pipe {fma:.0f} %, tensor pipe {tensor:.1f} %)",
        impact=fma / 100 * (1 - 1 / speedup) if speedup else fma / 100 * 0.5,
        explanation=("The inner loop is FMAs on operands reused from shared memory, the shape of a tiled matrix "
                     "product or convolution, and it keeps the FP32 pipe busy while the tensor cores sit idle. "
                     f"Tensor cores do this work {f'about {speedup:.0f}x' if speedup else 'many times'} faster, so "
                     "the FP32 roof this kernel is close to is the wrong roof."),
        advice=advice, evidence=evidence_, detail=precision)]
