"""Stage 1: roofline classification of the real H200 fixtures, and its routing to stage-2 diagnosers."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from kernelpro.profiling.diagnosers import DIAGNOSERS
from kernelpro.profiling.gpu_specs import lookup
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.ncu_csv import read_ncu_csv
from kernelpro.profiling.roofline import ALWAYS_RELEVANT, RELEVANT_BY_KIND, classify, flops_by_precision

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "data" / "ncu" / "planted"
GPU = lookup("NVIDIA H200")

EXPECTED_KIND = {
    "memory_bound": "memory_bound", "healthy_smem_padded": "memory_bound", "uncoalesced_global": "memory_bound",
    "smem_bank_conflicts": "memory_bound",  # the shared-memory pipe (L1) is at 99 %
    "register_spills": "memory_bound",  # spill traffic keeps L2 at 82 %
    # L2 at 73 % is its busiest unit, the tensor pipe at 49 %, but at 477 FLOP per DRAM byte it is above the 206
    # ridge: not memory-bound ("only fewer bytes make it faster" would be wrong), the compute side not saturated
    "healthy_wmma_gemm": "latency_bound",
    "compute_bound": "compute_bound", "warp_divergence": "compute_bound", "tensor_cores_unused": "compute_bound",
    "memory_latency_bound": "latency_bound", "occupancy_limited_registers": "latency_bound",
    "occupancy_limited_smem": "latency_bound", "occupancy_limited_blocksize": "latency_bound",
    "low_parallelism": "latency_bound", "barrier_stalls": "latency_bound", "atomic_contention": "latency_bound",
    "launch_overhead": "launch_bound",
}


@cache
def load(name: str) -> KernelMetrics:
    return read_ncu_csv(FIXTURES / f"{name}.csv")[0]


def test_every_fixture_has_an_expected_class():
    assert {p.stem for p in FIXTURES.glob("*.csv")} == set(EXPECTED_KIND)


@pytest.mark.parametrize("name,kind", EXPECTED_KIND.items())
def test_class(name, kind):
    roofline = classify(load(name), GPU)
    assert roofline.kind == kind, roofline.summary
    assert roofline.summary.startswith(kind.split("_")[0].capitalize())


def test_stream_triad_sits_on_the_memory_roof():
    r = classify(load("memory_bound"), GPU)
    assert r.distances["memory"] == pytest.approx(0.10, abs=0.02)  # 4.33 of 4.8 TB/s
    assert r.distances["compute"] > 0.95
    assert r.dram_bytes == pytest.approx(3 * 2**28, rel=0.03)  # three 256 MiB arrays (some writes stay in L2)
    assert r.intensity_flop_per_byte == pytest.approx(2 / 12, rel=0.05)  # one FMA per 12 bytes
    assert r.intensity_flop_per_byte < r.ridge_flop_per_byte


def test_fma_loop_sits_on_the_fp32_roof():
    r = classify(load("compute_bound"), GPU)
    assert r.precision == "fp32"
    assert r.flops == pytest.approx(2 * 8 * 16384 * 132 * 8 * 256, rel=0.01)  # 8 chains x 16384 steps per thread
    assert r.distances["compute"] == pytest.approx(0.09, abs=0.03)
    assert r.achieved_gflops == pytest.approx(60_900, rel=0.02)


def test_tensor_core_work_is_counted_at_the_tensor_roof():
    r = classify(load("healthy_wmma_gemm"), GPU)
    assert r.precision == "fp16_tensor"
    assert r.flops == pytest.approx(2 * 4096**3, rel=0.001)
    assert r.peak_gflops == pytest.approx(989_400)
    assert r.distances["compute"] == pytest.approx(0.69, abs=0.02)  # 311 of 989 TFLOP/s


def test_divergence_halves_the_useful_flops():
    # The same FFMA loop as compute_bound with half the lanes masked: issue is as busy, the FLOPs count half.
    assert classify(load("warp_divergence"), GPU).distances["compute"] == pytest.approx(0.54, abs=0.03)


def test_noise_flops_fall_back_to_the_fp32_roof():
    # HFMA2.MMA register moves count as half-precision FMAs in a kernel that does no arithmetic.
    k = load("atomic_contention")
    assert flops_by_precision(k).get("fp16", 0) > flops_by_precision(k)["fp32"]
    assert classify(k, GPU).precision == "fp32"


@pytest.mark.parametrize("kind", RELEVANT_BY_KIND)
def test_routing_names_real_diagnosers_and_always_the_cheap_ones(kind):
    r = classify(KernelMetrics(name="k", launch=0), GPU).model_copy(update={"kind": kind})
    ids = r.diagnoser_ids()
    assert set(ids) <= set(DIAGNOSERS)
    assert ids[:len(ALWAYS_RELEVANT)] == ALWAYS_RELEVANT


def test_routing_keeps_unrelated_diagnosers_out():
    memory = classify(load("memory_bound"), GPU).diagnoser_ids()
    compute = classify(load("compute_bound"), GPU).diagnoser_ids()
    assert "tensor_cores_unused" not in memory and "occupancy_limited" not in memory
    assert "uncoalesced_global" not in compute and "tensor_cores_unused" in compute


def _hand_built(**values: float) -> KernelMetrics:
    names = {"sm": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
             "memory": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
             "ns": "gpu__time_duration.sum", "ffma": "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
             "dram_bytes": "dram__bytes.sum"}
    return KernelMetrics(name="k", launch=0, values={names[k]: v for k, v in values.items()})


def test_hand_built_classes():
    assert classify(_hand_built(), GPU).kind == "unknown"
    assert classify(_hand_built(sm=5, memory=5, ns=3_000), GPU).kind == "launch_bound"
    assert classify(_hand_built(sm=5, memory=95, ns=3_000), GPU).kind == "memory_bound"  # short but saturating
    assert classify(_hand_built(sm=20, memory=30, ns=1e6), GPU).kind == "latency_bound"
    assert classify(_hand_built(sm=90, memory=30, ns=1e6), GPU).kind == "compute_bound"
    assert classify(_hand_built(sm=90), GPU).kind == "compute_bound"  # no duration: SOL alone decides


def test_a_tie_is_broken_by_intensity():
    # SM and memory within 10 points: FLOP per byte against the FP32 ridge point (~14) decides.
    low = _hand_built(sm=70, memory=72, ns=1e6, ffma=1e9, dram_bytes=1e9)  # 2 FLOP/byte
    high = _hand_built(sm=70, memory=72, ns=1e6, ffma=50e9, dram_bytes=1e9)  # 100 FLOP/byte
    assert classify(low, GPU).kind == "memory_bound"
    assert classify(high, GPU).kind == "compute_bound"


def test_zero_duration_gives_no_rates():
    r = classify(_hand_built(sm=70, memory=20, ns=0, ffma=1e9, dram_bytes=1e9), GPU)
    assert r.achieved_gflops is None and r.achieved_gbs is None and "compute" not in r.distances
    assert r.kind == "compute_bound" and r.intensity_flop_per_byte == pytest.approx(2.0)
