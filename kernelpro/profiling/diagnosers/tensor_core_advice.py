"""What tensor_cores_unused tells an FP32 GEMM or convolution: the ways onto the tensor cores that keep FP32
accuracy first, plain TF32 only where the problem's tolerance allows it, with the rates of this GPU.

The judge compares every output with a float64 oracle at the problem's tolerance, so a one-pass TF32 product
(a 10-bit mantissa, about 1e-3 relative error) passes or fails by that tolerance alone; 3xTF32 and BF16x3
split each FP32 operand into a high and a low part and keep errors near FP32's.
"""

from __future__ import annotations

# One-pass TF32 moves a product's result by about this much, relative (a 10-bit mantissa, errors growing with
# the reduction's length).
TF32_RELATIVE_ERROR = 1e-3
# Tensor-core products per FP32 product: 3xTF32 (big*big + big*small + small*big), BF16x3 (the six largest of
# the nine cross products of three bfloat16 terms).
TF32X3_PASSES = 3
BF16X3_PASSES = 6


def _times(peak: float | None, passes: int, fp32_peak: float | None) -> str:
    return f" (about {peak / passes / fp32_peak:.1f}x the FP32 FMA peak here)" if peak and fp32_peak else ""


def fp32_advice(tf32_peak: float | None, fp32_peak: float | None, bf16_peak: float | None = None) -> list[str]:
    rate = f" ({tf32_peak:.0f} against {fp32_peak:.0f} TFLOP/s)" if tf32_peak and fp32_peak else ""
    return [
        "Keep FP32 accuracy with 3xTF32: split each operand into a TF32 high part and its TF32 remainder and "
        "accumulate three tensor-core products in FP32, errors near FP32's. CUTLASS does it with the "
        "cutlass::arch::OpMultiplyAddFastF32 math operator (its examples 27_ampere_3xtf32_fast_accurate_tensorop_gemm "
        "and, for convolutions, 28_ampere_3xtf32_fast_accurate_tensorop_fprop); at a third of the TF32 rate"
        f"{_times(tf32_peak, TF32X3_PASSES, fp32_peak)}.",
        "BF16x3 is the same split on the BF16 tensor cores: three bfloat16 terms per operand, the six largest cross "
        f"products accumulated in FP32{_times(bf16_peak, BF16X3_PASSES, fp32_peak)}; near-FP32 accuracy where "
        "no TF32 path fits.",
        f"Plain TF32 (one pass, 10-bit mantissa){rate} only where the problem's tolerance allows it: results move "
        f"by about {TF32_RELATIVE_ERROR:.0e} relative, and the judge's tolerance against its float64 oracle decides. "
        "In a kernel: wmma with precision::tf32 or mma.sync .tf32 operands; in cuBLAS: "
        "CUBLAS_COMPUTE_32F_FAST_TF32, the same one-pass trade-off. torch.backends.cuda.matmul.allow_tf32 (or "
        "torch.set_float32_matmul_precision('high')) does it for torch's matmuls process-wide: set it inside the "
        "call and restore it before returning, or the judge rejects the changed flag.",
    ]


def half_advice(tensor_peak: float | None, fp32_peak: float | None) -> list[str]:
    rate = f" ({tensor_peak:.0f} against {fp32_peak:.0f} TFLOP/s)" if tensor_peak and fp32_peak else ""
    return [f"The data is already half precision (HADD2/HMUL2 conversions in the kernel): feed it to the tensor "
            f"cores directly with fp32 accumulation (nvcuda::wmma, mma.sync, or WGMMA through CUTLASS/CuTe){rate}."]


def tiling_advice() -> list[str]:
    return ["Keep the tiling you have: block tiles staged in shared memory map directly onto warp-level MMA tiles "
            "(e.g. 64x32 per warp of 16x16 fragments); load fragments with ldmatrix from padded or swizzled shared "
            "memory."]
