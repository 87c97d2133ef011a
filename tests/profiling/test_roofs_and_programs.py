"""Every kernel's nearest roof and its lever, the precision a kernel really computes in, GEMM-shaped kernels
routed to the tensor-core diagnoser, and program-level advice, on real H200 profiles (tests/data/ncu).

``programs/layernorm_gelu.csv`` is ``kernelpro profile`` of a LayerNorm then a GELU on an H200 (two PyTorch
kernels, each streaming the whole 4096x8192 float32 tensor), as committed under benchmarks/results.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache
from pathlib import Path

from kernelpro.profiling.diagnose import diagnose, diagnose_program
from kernelpro.profiling.gpu_specs import lookup
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.ncu_csv import read_ncu_csv
from kernelpro.profiling.roofline import classify, flops_by_precision

NCU = Path(__file__).resolve().parents[2] / "tests" / "data" / "ncu"
GPU = lookup("NVIDIA H200")
HFMA = "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed"
L1, MEMORY, SM = ("l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
                  "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
                  "sm__throughput.avg.pct_of_peak_sustained_elapsed")
FMA_PIPES = ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
             "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed")


@cache
def planted(name: str) -> KernelMetrics:
    return read_ncu_csv(NCU / "planted" / f"{name}.csv")[0]


@cache
def program() -> list[KernelMetrics]:
    return read_ncu_csv(NCU / "programs" / "layernorm_gelu.csv")


def edited(k: KernelMetrics, **values: float) -> KernelMetrics:
    return replace(k, values={**k.values, **values})


def test_a_shared_tiled_gemm_at_the_l1_roof_reaches_the_tensor_core_diagnoser():
    # The planted FP32 GEMM as the shared-memory-tiled matmul of a real run looked: L1/shared at 85% of peak (so
    # stage 1 calls it memory-bound) and the FMA pipe below half, fed too slowly.
    gemm = edited(planted("tensor_cores_unused"), **{L1: 85.0, MEMORY: 85.0, SM: 62.0,
                                                      FMA_PIPES[0]: 45.0, FMA_PIPES[1]: 45.0})
    result = diagnose(gemm, GPU)
    assert result.roofline.kind == "memory_bound" and result.roofline.roof == "l1"
    assert result.roofline.gemm_shaped and "tensor_cores_unused" in result.roofline.diagnoser_ids()
    assert "tensor_cores_unused" in {f.id for f in result.findings}
    assert "Nearest roof: L1/shared-memory bandwidth at 85% of peak (15% from it)" in result.render()
    assert any("Tile in registers" in advice for advice in result.roofline.roof_advice)


def test_an_elementwise_kernel_is_not_gemm_shaped():
    assert not classify(planted("memory_bound"), GPU).gemm_shaped
    assert not classify(planted("healthy_wmma_gemm"), GPU).gemm_shaped  # already on the tensor cores


def test_every_planted_kernel_gets_its_nearest_roof_and_distance():
    for path in sorted((NCU / "planted").glob("*.csv")):
        r = classify(read_ncu_csv(path)[0], GPU)
        assert r.roof in r.roofs and "Nearest roof:" in r.summary, path.stem
        assert bool(r.roof_advice) == (r.roof_pct >= 60), path.stem  # advice where the kernel is near its roof


def test_a_kernel_near_a_roof_with_no_finding_gets_that_roofs_advice():
    result = diagnose(planted("healthy_wmma_gemm"), GPU)
    assert result.findings == []
    text = result.render()
    assert "Nearest roof: L2 bandwidth at 73% of peak" in text and "Reuse more per L2 read" in text
    assert "No bottleneck found" not in text


def test_the_wmma_gemm_above_the_ridge_is_not_called_memory_bound():
    r = classify(planted("healthy_wmma_gemm"), GPU)
    assert r.intensity_flop_per_byte > r.ridge_flop_per_byte  # 477 against 206
    assert r.kind != "memory_bound" and "only fewer" not in r.summary and "above the ridge" in r.summary


def test_an_fp32_kernel_is_placed_against_the_fp32_peak_whatever_its_register_moves_count():
    # The GELU kernel of a real program, with its HFMA2.MMA register moves at forty times the recorded rate, as
    # an FP32 addcmul showed them: they are not half-precision math.
    gelu = program()[1]
    noisy = edited(gelu, **{HFMA: gelu.values[HFMA] * 40})
    assert flops_by_precision(noisy).get("fp16", 0.0) == 0.0
    r = classify(noisy, GPU)
    assert r.precision == "fp32" and round(r.ridge_flop_per_byte) == 14
    assert r.kind == "memory_bound" and "fp16" not in r.summary


def test_a_busy_sm_far_below_the_ridge_is_not_compute_bound():
    names = {"sm": SM, "memory": MEMORY, "ns": "gpu__time_duration.sum",
             "ffma": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "dram_bytes": "dram__bytes.sum"}
    # 1 FLOP per DRAM byte, 2 TB/s, 2 TFLOP/s: the SM's 75% is load/store issue, not math.
    k = KernelMetrics(name="k", launch=0, values={names[n]: v for n, v in dict(
        sm=75, memory=64, ns=1e6, ffma=1e9, dram_bytes=2e9).items()})
    assert classify(k, GPU).kind == "memory_bound"


def test_a_program_of_streaming_kernels_is_told_to_fuse_them():
    result = diagnose_program(program(), GPU)
    (fuse,) = [f for f in result.findings if f.id == "unfused_kernels"]
    assert "2 kernels" in fuse.title and "Fuse the chain" in fuse.advice[0]
    assert "unfused_kernels" in result.render()
    # one kernel alone has nothing to fuse with
    assert not [f for f in diagnose_program(program()[:1], GPU).findings if f.id == "unfused_kernels"]


def test_diagnose_json_lists_every_finding_at_the_top_with_its_kernel():
    data = diagnose_program(program(), GPU).to_dict()
    kernels = {g["name"] for g in data["kernels"]}
    assert {f["kernel"] for f in data["findings"]} == kernels | {None}  # program-level ones have no kernel
    per_kernel = sum(len(g["findings"]) for g in data["kernels"])
    assert len(data["findings"]) == per_kernel + len(data["program_findings"])


def test_one_launch_of_one_kernel_reads_as_english():
    assert diagnose_program(program()[:1], GPU).render().startswith("1 launch of 1 kernel, ")
    assert diagnose_program(program(), GPU).render().startswith("2 launches of 2 kernels, ")


def test_every_hot_kernel_is_diagnosed():
    names = ["memory_bound", "compute_bound", "barrier_stalls", "warp_divergence", "atomic_contention",
             "register_spills", "uncoalesced_global"]
    kernels = [edited(planted(n), **{"gpu__time_duration.sum": 100_000.0}) for n in names]
    result = diagnose_program(kernels, GPU)
    assert len(result.kernels) == 7 and all(g.diagnosis is not None for g in result.kernels)  # each 14%
    for group in result.kernels:  # each with its roof and its distance from it, none left without a word
        text = group.diagnosis.render()
        assert re.search(r"Nearest roof: .+ at [\d.]+% of peak \([\d.]+% from it\)", text), group.name
        assert "No bottleneck found" not in text, group.name
