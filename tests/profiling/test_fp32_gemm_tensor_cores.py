"""An FP32 GEMM or convolution leaving the tensor cores idle is told so, with the ways onto them that keep FP32
accuracy (3xTF32, BF16x3) before plain TF32, which only the problem's tolerance can allow.

The shared-memory tiled GEMM here is CONSTRUCTED: the real H200 capture of the planted register-tiled FP32 GEMM
(tests/data/ncu/planted/tensor_cores_unused.csv, same metric names and units) with the values a plain 16x16
shared-tiled SGEMM of the same size shows (two shared loads per FFMA, L1 at its roof, the FMA pipe a third busy,
no half-precision conversions). The real capture of such a kernel and of torch.mm with TF32 off comes from
`python benchmarks/profiling/capture_fp32_gemm.py` on a GPU; its test is skipped until that file exists.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

from kernelpro.profiling.diagnose import diagnose, diagnose_program
from kernelpro.profiling.diagnosers.tensor_cores import diagnose_tensor_cores_unused, recognition
from kernelpro.profiling.gpu_specs import lookup
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.ncu_csv import read_ncu_csv

NCU = Path(__file__).resolve().parents[2] / "tests" / "data" / "ncu"
FP32_GEMM_CAPTURES = [NCU / "programs" / "fp32_gemm.csv", NCU / "programs" / "fp32_gemm_stage1.csv"]
GPU = lookup("NVIDIA H200")
N = 4096
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
HADD_RATE = "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum.per_cycle_elapsed"
SHARED_LOADS = "smsp__sass_inst_executed_op_shared_ld.sum"
INSTRUCTIONS = "smsp__inst_executed.sum"
FMA_PIPES = ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
             "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed",
             "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active")
TENSOR = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
SOL = {"sm__throughput.avg.pct_of_peak_sustained_elapsed": 62.0,
       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 85.0,
       "l1tex__throughput.avg.pct_of_peak_sustained_elapsed": 85.0}


@cache
def planted(name: str) -> KernelMetrics:
    return read_ncu_csv(NCU / "planted" / f"{name}.csv")[0]


def constructed_shared_tiled_sgemm(name: str = "constructed_fp32_shared_tiled_product") -> KernelMetrics:
    """See the module docstring: a 4096^3 16x16-tile SGEMM, 20 shared loads (4 LDS.128 + 16 LDS) per 16 FFMA."""
    real = planted("tensor_cores_unused")
    ffma_warp = N ** 3 / 32
    values = {**real.values, **SOL, FFMA: float(N ** 3), HADD_RATE: 0.0, SHARED_LOADS: ffma_warp * 20 / 16,
              INSTRUCTIONS: ffma_warp * 2.5, "gpu__time_duration.sum": 6.9e6,
              "smsp__issue_active.avg.pct_of_peak_sustained_active": 55.0}
    values |= {FMA_PIPES[0]: 30.0, FMA_PIPES[1]: 30.0, FMA_PIPES[2]: 31.0}
    return replace(real, name=name, full_name=f"{name}(const float *, const float *, float *, int)", values=values)


def sol_only(name: str, **extra: float) -> KernelMetrics:
    """A kernel as ncu's speed-of-light section and stage 1's pipe readings show it, no instruction counts."""
    return KernelMetrics(name=name, launch=0, values={**SOL, FMA_PIPES[0]: 45.0, TENSOR: 0.0,
                                                      "gpu__time_duration.sum": 2e6, **extra})


def test_a_shared_tiled_fp32_gemm_with_idle_tensor_cores_is_told_so():
    gemm = constructed_shared_tiled_sgemm()
    assert recognition(gemm) == "shared-memory tiled"
    result = diagnose(gemm, GPU)
    assert "tensor_cores_unused" in result.roofline.diagnoser_ids()
    (found,) = [f for f in result.findings if f.id == "tensor_cores_unused"]
    assert found.detail == "tf32_tensor" and found.severity == "high"
    assert "FP32 GEMM or convolution" in found.title
    evidence = {e.metric: e.value for e in found.evidence}
    assert evidence["FFMA share of warp instructions"] == 40.0 and evidence[TENSOR] == 0.0
    assert evidence["FP32 FLOP per DRAM byte"] > 100


def test_the_advice_puts_accuracy_keeping_paths_before_plain_tf32():
    (found,) = diagnose_tensor_cores_unused(constructed_shared_tiled_sgemm(), GPU)
    three_tf32, bf16x3, tf32 = found.advice[:3]
    assert "3xTF32" in three_tf32 and "OpMultiplyAddFastF32" in three_tf32 and "FP32" in three_tf32
    assert "BF16x3" in bf16x3
    assert "tolerance" in tf32 and "1e-03 relative" in tf32 and "CUBLAS_COMPUTE_32F_FAST_TF32" in tf32
    assert "allow_tf32" in tf32 and "restore" in tf32 and "495 against 67 TFLOP/s" in tf32
    text = diagnose_program([constructed_shared_tiled_sgemm()], GPU).render()
    assert "Tensor cores unused" in text and "3xTF32" in text


@pytest.mark.parametrize("name", ["cutlass_80_simt_sgemm_128x128_8x4_nn_align1", "ampere_sgemm_128x64_nn",
                                  "implicit_convolve_sgemm", "my_conv2d_fp32_kernel", "matmul_kernel"])
def test_an_fp32_gemm_or_convolution_is_recognised_by_name(name):
    (found,) = diagnose_tensor_cores_unused(sol_only(name), GPU)
    assert found.evidence[0].metric.startswith("kernel name") and "3xTF32" in found.advice[0]


@pytest.mark.parametrize("name", ["cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4",
                                  "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_"
                                  "execute_segment_k_off_kernel__5x_cublas", "wmma_hmma_gemm",
                                  "convert_float_to_bf16", "elementwise_kernel"])
def test_names_with_a_tensor_core_path_or_no_gemm_are_left_alone(name):
    assert diagnose_tensor_cores_unused(sol_only(name), GPU) == []


def test_busy_tensor_cores_or_double_precision_are_not_told_to_use_them():
    assert diagnose_tensor_cores_unused(sol_only("ampere_sgemm_128x64_nn", **{TENSOR: 40.0}), GPU) == []
    busy = replace(constructed_shared_tiled_sgemm(), values={**constructed_shared_tiled_sgemm().values,
                                                             TENSOR: 40.0})
    assert diagnose_tensor_cores_unused(busy, GPU) == []


@pytest.mark.parametrize("name", ["memory_bound", "compute_bound", "warp_divergence", "barrier_stalls",
                                  "register_spills", "healthy_smem_padded", "healthy_wmma_gemm",
                                  "occupancy_limited_smem"])
def test_kernels_that_are_not_matrix_products_are_left_alone(name):
    assert recognition(planted(name)) is None


def test_the_real_layernorm_and_gelu_kernels_are_left_alone():
    for kernel in read_ncu_csv(NCU / "programs" / "layernorm_gelu.csv"):
        assert recognition(kernel) is None, kernel.name


@pytest.mark.parametrize("path", FP32_GEMM_CAPTURES, ids=lambda p: p.stem)
def test_a_real_fp32_gemm_capture_names_the_tensor_cores(path):
    if not path.exists():
        pytest.skip(f"{path.name} is not captured yet: run `python benchmarks/profiling/capture_fp32_gemm.py` "
                    "on a GPU with ncu")
    program = diagnose_program(read_ncu_csv(path), GPU)
    gemms = [g for g in program.kernels if "sgemm_smem_tiled" in g.name or "gemm" in g.name.lower()]
    assert len(gemms) >= 2, [g.name for g in program.kernels]  # the tiled kernel and cuBLAS's FP32 one
    for group in gemms:
        assert "tensor_cores_unused" in {f.id for f in group.diagnosis.findings}, group.name
