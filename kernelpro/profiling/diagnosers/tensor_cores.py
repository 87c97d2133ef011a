"""tensor_cores_unused: a matrix product or convolution runs as FP32 FMAs on the CUDA cores while the tensor
cores idle.

Recognised three ways, each with the tensor pipe idle: register-tiled (every operand read from shared memory
feeds several FFMAs), shared-memory tiled (FFMAs a large share of the instructions, operands staged in shared
memory, matrix-like FLOP per DRAM byte; a plain 16x16-tile GEMM reads two shared operands per FFMA and sits at
the L1 roof with its FMA pipe a third busy), or by name (sgemm, gemm, conv, implicit_gemm, cutlass, ...) without
a tensor-core path in it (tf32, tensorop, hmma, wgmma, ...).
"""

from __future__ import annotations

import re

from kernelpro.profiling.diagnosers.signals import evidence, finding, ratio, thread_ops, total
from kernelpro.profiling.diagnosers.tensor_core_advice import fp32_advice, half_advice, tiling_advice
from kernelpro.profiling.findings import Evidence, Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

FMA_PIPE = ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed",
            "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active")
# Every reading of tensor-core activity a profile may hold (names as ncu prints them on sm_90; the gmma ones are
# Hopper's WGMMA): the busiest decides whether the tensor cores idle.
TENSOR_PIPE = ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
               "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
               "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
               "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg"
               ".pct_of_peak_sustained_elapsed",
               "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed")
SHARED_LOADS = "smsp__sass_inst_executed_op_shared_ld.sum"
INSTRUCTIONS = "smsp__inst_executed.sum"
DRAM_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")
# ptxas's HFMA2.MMA register moves show a few % of tensor-pipe activity in pure FP32 kernels: below 5 % the
# tensor cores are idle.
TENSOR_NOISE_PCT = 5.0
# The FMA pipe must carry the kernel (elapsed time, so idle SMs count against it).
FMA_BUSY_PCT = 50.0
# A register-tiled matrix product reuses each operand loaded from shared memory in several FMAs (16 FFMA per
# LDS.128 in the 8x8 micro-tile plant); a register-only FMA loop has no shared loads at all.
FFMA_PER_SHARED_LOAD_MIN = 4.0
# GEMM-shaped: FFMAs are at least this share of the warp instructions (the planted FP32 GEMM: 0.91; a plain
# shared-tiled GEMM about 0.4; an elementwise or normalisation kernel 0.17-0.25 with few FLOPs per byte).
GEMM_FFMA_SHARE = 0.25
# Matrix-like arithmetic intensity: each element brought from DRAM feeds at least this many FP32 FLOPs (an n-wide
# product reaches about n/6; elementwise and normalisation kernels stay near 1-3, the real LayerNorm/GELU at 2.2
# and 2.6).
MATRIX_FLOP_PER_BYTE = 8.0
# Recognised by name, the kernel must still do FP32 FMAs: a tensor-core kernel's FFMAs are its epilogue, a few %.
NAMED_FFMA_SHARE = 0.1
# Impact when the kernel is recognised from its shape with the FMA pipe far from busy (fed too slowly): the
# FP32 roof is the wrong roof whatever its level.
SHAPED_FMA_FLOOR = 0.5

_HALF_ARITHMETIC = ("hadd", "hmul")  # HFMA alone beside FP32 work is ptxas's HFMA2.MMA register moves
_GEMM_NAME = re.compile(r"gemm|matmul|conv(?!ert)|cutlass|xmma|fprop|dgrad|wgrad|winograd", re.IGNORECASE)
# cuBLAS names both its SIMT and its tensor-core kernels "xmma": only the MMA path itself marks the tensor cores.
_TENSOR_NAME = re.compile(r"tf32|tensor|hmma|imma|dmma|gmma|(?<!x)mma|1688|16816|16832|16x8x", re.IGNORECASE)


def tensor_pct(k: KernelMetrics) -> float | None:
    """The busiest tensor-core reading the profile holds, % of peak; None when none was collected."""
    readings = [k.values[m] for m in TENSOR_PIPE if m in k.values]
    return max(readings) if readings else None


def ffma_share(k: KernelMetrics) -> float | None:
    """FFMA warp instructions as a share of all warp instructions."""
    ffma = thread_ops(k, "ffma")
    return ratio(ffma / 32 if ffma is not None else None, k.get(INSTRUCTIONS))


def ffma_per_shared_load(k: KernelMetrics) -> float | None:
    ffma = thread_ops(k, "ffma")
    return ratio(ffma / 32 if ffma else None, k.get(SHARED_LOADS))


def fp32_flop_per_byte(k: KernelMetrics) -> float | None:
    ffma = thread_ops(k, "ffma")
    flops = None if ffma is None else 2 * ffma + (thread_ops(k, "fadd") or 0.0) + (thread_ops(k, "fmul") or 0.0)
    return ratio(flops, k.get("dram__bytes.sum") or total(k, *DRAM_BYTES))


def named_like_gemm(k: KernelMetrics) -> bool:
    """A GEMM or convolution by its name, without a tensor-core path in it (cuBLAS's sgemm, CUTLASS's simt)."""
    return bool(_GEMM_NAME.search(k.name)) and not _TENSOR_NAME.search(k.name)


def _tensor_idle(k: KernelMetrics) -> bool:
    tensor = tensor_pct(k)
    return tensor is None or tensor < TENSOR_NOISE_PCT


def _register_tiled(k: KernelMetrics) -> bool:
    per_load, share, fma = ffma_per_shared_load(k), ffma_share(k), k.first(*FMA_PIPE)
    return per_load is not None and per_load >= FFMA_PER_SHARED_LOAD_MIN and (
        (share is not None and share >= GEMM_FFMA_SHARE) or (fma is not None and fma >= FMA_BUSY_PCT))


def _shared_tiled(k: KernelMetrics) -> bool:
    share, intensity = ffma_share(k), fp32_flop_per_byte(k)
    return bool(k.get(SHARED_LOADS)) and share is not None and share >= GEMM_FFMA_SHARE and (
        intensity is None or intensity >= MATRIX_FLOP_PER_BYTE)


def _named(k: KernelMetrics) -> bool:
    share = ffma_share(k)
    return named_like_gemm(k) and (share is None or share >= NAMED_FFMA_SHARE)


def recognition(k: KernelMetrics) -> str | None:
    """How the kernel reads as a matrix product on the CUDA cores: "register-tiled", "shared-memory tiled",
    "named"; None when it does not (or its tensor pipe is busy)."""
    if not _tensor_idle(k) or (thread_ops(k, "dfma") or 0.0) > (thread_ops(k, "ffma") or 0.0):
        return None
    if _register_tiled(k):
        return "register-tiled"
    if _shared_tiled(k):
        return "shared-memory tiled"
    return "named" if _named(k) else None


def gemm_shaped(k: KernelMetrics) -> bool:
    """A matrix product or convolution on the CUDA cores, whatever the kernel's roofline class (a shared-tiled
    FP32 GEMM is L1-bound first)."""
    return recognition(k) is not None


def _evidence(k: KernelMetrics, how: str) -> list[Evidence]:
    found: list[Evidence] = []
    tensor = tensor_pct(k)
    if tensor is not None:
        name = next(m for m in TENSOR_PIPE if m in k.values and k.values[m] == tensor)
        found.append(evidence(name, tensor, "%", f"< {TENSOR_NOISE_PCT:.0f} % (idle)"))
    if how == "named":
        found.insert(0, evidence(f"kernel name {k.name[:60]!r} matches GEMM/convolution, no tensor-core path", 1,
                                 "", "gemm|conv|cutlass|... without tf32|tensorop|hmma|wgmma"))
    share, per_load, intensity = ffma_share(k), ffma_per_shared_load(k), fp32_flop_per_byte(k)
    if share is not None:
        found.append(evidence("FFMA share of warp instructions", share * 100, "%",
                              f">= {(NAMED_FFMA_SHARE if how == 'named' else GEMM_FFMA_SHARE):.0%}"))
    if per_load is not None:
        found.append(evidence("FFMA warp instructions per shared load", per_load, "",
                              f">= {FFMA_PER_SHARED_LOAD_MIN:.0f}" if how == "register-tiled" else ""))
    if intensity is not None:
        found.append(evidence("FP32 FLOP per DRAM byte", intensity, "FLOP/byte",
                              f">= {MATRIX_FLOP_PER_BYTE:.0f}" if how == "shared-memory tiled" else ""))
    fma = k.first(*FMA_PIPE)
    if fma is not None:
        found.append(evidence(next(m for m in FMA_PIPE if m in k.values), fma, "%"))
    return found


def diagnose_tensor_cores_unused(k: KernelMetrics, gpu: GpuSpecs) -> list[Finding]:
    how = recognition(k)
    if how is None:
        return []
    half_data = any((thread_ops(k, op) or 0) > 0 for op in _HALF_ARITHMETIC)
    precision = "fp16_tensor" if half_data else "tf32_tensor"
    fp32_peak, tensor_peak = gpu.peak_tflops.get("fp32"), gpu.peak_tflops.get(precision)
    speedup = tensor_peak / fp32_peak if tensor_peak and fp32_peak else None
    fma = k.first(*FMA_PIPE)
    carried = max((fma or 0.0) / 100, SHAPED_FMA_FLOOR)
    advice = half_advice(tensor_peak, fp32_peak) if half_data else fp32_advice(
        tensor_peak, fp32_peak, gpu.peak_tflops.get("bf16_tensor"))
    tensor = tensor_pct(k)
    pipes = ", ".join(part for part in (f"FMA pipe {fma:.0f} %" if fma is not None else "",
                                        f"tensor pipe {tensor:.1f} %" if tensor is not None else "") if part)
    kind = "an FP32 GEMM or convolution" if not half_data else "a matrix product"
    return [finding(
        "tensor_cores_unused", f"Tensor cores unused: {kind} runs as FP32 FMAs on the CUDA cores"
        + (f" ({pipes})" if pipes else ""),
        impact=carried * (1 - 1 / speedup) if speedup else carried * 0.5,
        explanation=(f"This kernel is {_how_text(how)}, and it keeps the CUDA cores' FP32 FMAs doing the work "
                     "while the tensor cores sit idle. Tensor cores do this work "
                     f"{f'about {speedup:.0f}x' if speedup else 'many times'} faster, so the FP32 roof this kernel is "
                     "measured against is the wrong roof."),
        advice=advice + tiling_advice(), evidence=_evidence(k, how), detail=precision)]


def _how_text(how: str) -> str:
    return {"register-tiled": "a tiled matrix product (FMAs on operands reused from shared memory)",
            "shared-memory tiled": "a matrix product tiled through shared memory (FMAs most of its instructions, "
                                   "matrix-like FLOPs per DRAM byte)",
            "named": "a GEMM or convolution by its name, with no tensor-core path in it"}[how]
