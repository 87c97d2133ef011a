"""Stage 1 of micro-profiling: place a kernel on the roofline and decide which diagnosers are worth running.

The class comes from ncu's speed-of-light percentages (the busiest unit, SM or memory, as a share of its
peak), cross-checked with the classic roofline: achieved FLOP/s and DRAM bytes/s against the GPU's peaks. A
kernel whose busiest unit is under 60 % of peak is latency-bound (waiting, not working); one shorter than
10 us that saturates nothing is launch-bound. When SM and memory are within 10 points of each other the
arithmetic intensity against the ridge point breaks the tie.

Two-stage invocation: the class picks the stage-2 diagnosers that can explain it, so an agent reads a few
relevant findings, not thirteen. register_spills, low_parallelism and launch_overhead run always: they are
cheap, and each can hide behind any class (spills look memory-bound, a tiny grid looks latency-bound).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kernelpro.profiling.diagnosers.memory import L2_BOUND_PCT
from kernelpro.profiling.diagnosers.signals import (
    BUSY_PCT,
    L1_PCT,
    L2_PCT,
    MEMORY_PCT,
    SM_PCT,
    dram_pct,
    duration,
    is_short,
    pct,
    thread_ops,
    total,
)
from kernelpro.profiling.diagnosers.tensor_cores import gemm_shaped
from kernelpro.profiling.findings import FINDING_IDS
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.roofs import advice_for, describe, nearest, roof_levels

RooflineKind = Literal["memory_bound", "compute_bound", "latency_bound", "launch_bound", "unknown"]

# SM and memory within this many points of each other: neither clearly dominates, so intensity decides.
TIE_MARGIN_PCT = 10.0

ALWAYS_RELEVANT = ("launch_overhead", "low_parallelism", "register_spills")
RELEVANT_BY_KIND: dict[str, tuple[str, ...]] = {
    "memory_bound": ("memory_bound", "uncoalesced_global", "smem_bank_conflicts", "atomic_contention"),
    "compute_bound": ("compute_bound", "tensor_cores_unused", "warp_divergence"),
    "latency_bound": ("memory_latency_bound", "occupancy_limited", "barrier_stalls", "atomic_contention",
                      "uncoalesced_global", "smem_bank_conflicts", "warp_divergence"),
    "launch_bound": (),
    "unknown": FINDING_IDS,  # nothing to route by: every diagnoser checks for itself
}

# FLOP per thread instruction on the CUDA cores (FMA = 2; half-precision ops assumed packed half2, as ncu's
# derived FLOP metrics count them).
_CORE_FLOPS = {"fp32": {"fadd": 1, "fmul": 1, "ffma": 2}, "fp64": {"dadd": 1, "dmul": 1, "dfma": 2},
               "fp16": {"hadd": 2, "hmul": 2, "hfma": 4}}
# Tensor-core work as ncu counts it (FLOP, 2 per multiply-add), by input type -> the GpuSpecs peak it runs at.
_TENSOR_OPS = {"sm__ops_path_tensor_src_fp16.sum": "fp16_tensor",
               "sm__ops_path_tensor_src_bf16_dst_fp32.sum": "bf16_tensor",
               "sm__ops_path_tensor_src_tf32_dst_fp32.sum": "tf32_tensor",
               "sm__ops_path_tensor_src_fp64.sum": "fp64_tensor",
               "sm__ops_path_tensor_src_fp8_sparsity_off.sum": "fp8_tensor",
               "sm__ops_path_tensor_src_fp8_sparsity_on.sum": "fp8_tensor"}
# fp16 on the CUDA cores runs at twice the FP32 rate on sm_80 and later.
_FP16_CORE_SPEEDUP = 2.0
# Half-precision arithmetic proper: HADD2/HMUL2. HFMA2 alone beside FP32 work is ptxas's HFMA2.MMA register moves,
# which ncu counts as half-precision FMAs (an FP32 addcmul showed 3.2 TFLOP/s of "fp16" that way).
_HALF_ARITHMETIC = ("hadd", "hmul")
# Far below the ridge (a quarter of it) and far from the compute roof, a busy SM is issuing loads and stores,
# not math: the kernel is on the memory side whatever sm__throughput says.
FAR_BELOW_RIDGE = 0.25
# Below 1 % of a roof the counts are noise (ptxas's HFMA2.MMA register moves count as half-precision FMAs),
# and the roofline position says nothing: fall back to the FP32 roof and leave intensity out of the summary.
NEGLIGIBLE_FRACTION = 0.01


class Roofline(BaseModel):
    """Where a kernel sits against its roofs, and which diagnosers that makes relevant."""

    kind: RooflineKind
    summary: str  # one sentence for an agent
    distances: dict[str, float] = Field(default_factory=dict)  # roof -> fraction of it NOT reached, 0..1
    throughput_pct: dict[str, float] = Field(default_factory=dict)  # ncu speed of light: sm, memory, dram, l2, l1
    precision: str = "fp32"  # the compute roof used: the precision that did most of the FLOPs
    flops: float | None = None
    dram_bytes: float | None = None
    intensity_flop_per_byte: float | None = None  # FLOP per DRAM byte
    ridge_flop_per_byte: float | None = None
    achieved_gflops: float | None = None
    achieved_gbs: float | None = None
    peak_gflops: float | None = None
    peak_gbs: float | None = None
    roofs: dict[str, float] = Field(default_factory=dict)  # roof (compute, dram, l2, l1) -> % of its peak
    roof: str | None = None  # the nearest of them
    roof_advice: list[str] = Field(default_factory=list)  # what to do about it, when the kernel is near it
    gemm_shaped: bool = False  # FMAs on operands reused from shared memory: a matrix product on the CUDA cores

    @property
    def roof_pct(self) -> float | None:
        return self.roofs.get(self.roof) if self.roof else None

    def diagnoser_ids(self) -> tuple[str, ...]:
        """The stage-2 diagnosers to run for this class, always-relevant ones first. A GEMM-shaped kernel always
        reaches the tensor-core diagnoser, whatever its class (a shared-tiled FP32 GEMM is L1-bound first)."""
        ids = ALWAYS_RELEVANT + RELEVANT_BY_KIND[self.kind] + (("tensor_cores_unused",) if self.gemm_shaped else ())
        return tuple(dict.fromkeys(ids))


def flops_by_precision(k: KernelMetrics) -> dict[str, float]:
    """FLOPs per compute roof (fp32, fp64, fp16, fp16_tensor, ...), only those the profile counted."""
    work: dict[str, float] = {}
    for precision, ops in _CORE_FLOPS.items():
        counts = {op: thread_ops(k, op) for op in ops}
        if any(count is not None for count in counts.values()):
            work[precision] = sum((count or 0.0) * ops[op] for op, count in counts.items())
    if work.get("fp32") and not any(thread_ops(k, op) for op in _HALF_ARITHMETIC):
        work.pop("fp16", None)  # register moves, not half-precision math
    for metric, precision in _TENSOR_OPS.items():
        if k.get(metric):
            work[precision] = work.get(precision, 0.0) + k.values[metric]
    return work


def _peak_tflops(gpu: GpuSpecs, precision: str) -> float | None:
    if precision == "fp16":
        fp32 = gpu.peak_tflops.get("fp32")
        return fp32 * _FP16_CORE_SPEEDUP if fp32 else None
    return gpu.peak_tflops.get(precision)


def classify(k: KernelMetrics, gpu: GpuSpecs) -> Roofline:
    """Stage 1: the roofline class of one kernel launch."""
    seconds = (k.duration_ns or 0.0) * 1e-9
    work = flops_by_precision(k)
    precision = max(work, key=lambda p: work[p]) if work else "fp32"
    top_peak = _peak_tflops(gpu, precision)
    if not work or not top_peak or seconds <= 0 or work[precision] / seconds < NEGLIGIBLE_FRACTION * top_peak * 1e12:
        precision = "fp32"
    flops = sum(work.values()) if work else None
    moved = k.get("dram__bytes.sum") or total(k, "dram__bytes_read.sum", "dram__bytes_write.sum")
    peak_tflops = _peak_tflops(gpu, precision)
    gflops = flops / seconds / 1e9 if flops is not None and seconds > 0 else None
    gbs = moved / seconds / 1e9 if moved is not None and seconds > 0 else None
    sol = {name: value for name, value in (("sm", k.get(SM_PCT)), ("memory", k.get(MEMORY_PCT)),
                                           ("dram", dram_pct(k)), ("l2", k.get(L2_PCT)), ("l1", k.get(L1_PCT)))
           if value is not None}
    distances = {}
    if gflops is not None and peak_tflops:
        distances["compute"] = round(max(0.0, 1 - gflops / (peak_tflops * 1e3)), 3)
    if gbs is not None and gpu.memory_bandwidth_gbs:
        distances["memory"] = round(max(0.0, 1 - gbs / gpu.memory_bandwidth_gbs), 3)
    elif "dram" in sol:
        distances["memory"] = round(max(0.0, 1 - sol["dram"] / 100), 3)
    intensity = flops / moved if flops is not None and moved else None
    ridge = peak_tflops * 1e12 / (gpu.memory_bandwidth_gbs * 1e9) if peak_tflops and gpu.memory_bandwidth_gbs \
        else None
    roofline = Roofline(
        kind="unknown", summary="", distances=distances, throughput_pct=sol, precision=precision, flops=flops,
        dram_bytes=moved, intensity_flop_per_byte=intensity, ridge_flop_per_byte=ridge, achieved_gflops=gflops,
        achieved_gbs=gbs, peak_gflops=peak_tflops * 1e3 if peak_tflops else None,
        peak_gbs=gpu.memory_bandwidth_gbs or None)
    levels = roof_levels(k, 1 - distances["compute"] if "compute" in distances else None, sol)
    near = nearest(levels)
    roofline = roofline.model_copy(update={
        "roofs": {name: round(value, 2) for name, value in levels.items()}, "roof": near[0] if near else None,
        "roof_advice": advice_for(*near) if near else [], "gemm_shaped": gemm_shaped(k)})
    kind = _kind(k, roofline)
    summary = _summary(k, roofline, kind) + (f" {describe(near[0], near[1], precision)}" if near else "")
    return roofline.model_copy(update={"kind": kind, "summary": summary})


def _sides(r: Roofline) -> tuple[float | None, float | None]:
    """(compute, memory) as the busier of ncu's speed of light and the classic roofline, in % of peak."""
    compute = [r.throughput_pct.get("sm")] + ([100 * (1 - r.distances["compute"])] if "compute" in r.distances
                                              else [])
    memory = [r.throughput_pct.get(n) for n in ("memory", "dram")] + (
        [100 * (1 - r.distances["memory"])] if "memory" in r.distances else [])
    best = [max((v for v in side if v is not None), default=None) for side in (compute, memory)]
    return best[0], best[1]


def _kind(k: KernelMetrics, r: Roofline) -> RooflineKind:
    compute, memory = _sides(r)
    busiest = max((v for v in (compute, memory) if v is not None), default=None)
    if is_short(k) and (busiest is None or busiest < BUSY_PCT):
        return "launch_bound"
    if busiest is None:
        return "unknown"
    if busiest < BUSY_PCT:
        return "latency_bound"
    if compute is None or memory is None:
        return "compute_bound" if compute is not None else "memory_bound"
    intensity, ridge = r.intensity_flop_per_byte, r.ridge_flop_per_byte
    if intensity is not None and ridge and _meaningful(r.achieved_gbs, r.peak_gbs):
        dram = r.throughput_pct.get("dram", 0.0)
        if memory > compute and intensity > ridge and dram < BUSY_PCT and memory < L2_BOUND_PCT:
            # Above the ridge the DRAM roof cannot bind it, and the on-chip traffic is below where L2 or L1 limit
            # (a healthy tensor-core GEMM sits at ~70% of L2): the compute side is where the time goes.
            return "compute_bound" if compute >= BUSY_PCT else "latency_bound"
        math = max(r.roofs.get("compute", 0.0), 100 * (1 - r.distances.get("compute", 1.0)))
        if compute > memory and intensity < FAR_BELOW_RIDGE * ridge and math < BUSY_PCT:
            return "memory_bound" if memory >= BUSY_PCT else "latency_bound"
    if abs(compute - memory) < TIE_MARGIN_PCT and r.intensity_flop_per_byte is not None and r.ridge_flop_per_byte:
        return "memory_bound" if r.intensity_flop_per_byte < r.ridge_flop_per_byte else "compute_bound"
    return "compute_bound" if compute >= memory else "memory_bound"


def _meaningful(achieved: float | None, peak: float | None) -> bool:
    return achieved is not None and bool(peak) and achieved >= NEGLIGIBLE_FRACTION * (peak or 0)


def _intensity(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2g}"


def _busiest_memory_unit(r: Roofline) -> str:
    units = {"DRAM": r.throughput_pct.get("dram"), "L2": r.throughput_pct.get("l2"),
             "L1/shared memory": r.throughput_pct.get("l1")}
    name, value = max(((n, v) for n, v in units.items() if v is not None), key=lambda u: u[1], default=("", None))
    memory = r.throughput_pct.get("memory")
    if value is None or (memory is not None and memory > value + TIE_MARGIN_PCT):
        return f"memory at {pct(memory or 0)} of peak"
    return f"{name} at {pct(value)} of peak"


def _summary(k: KernelMetrics, r: Roofline, kind: RooflineKind) -> str:
    compute, memory = _sides(r)
    where = ""
    if (r.intensity_flop_per_byte is not None and r.ridge_flop_per_byte and _meaningful(r.achieved_gflops,
                                                                                        r.peak_gflops)
            and _meaningful(r.achieved_gbs, r.peak_gbs)):
        where = (f" at {_intensity(r.intensity_flop_per_byte)} FLOP per DRAM byte (the {r.precision} ridge point "
                 f"is {r.ridge_flop_per_byte:.0f})")
    if kind == "launch_bound":
        return (f"Launch-bound: {duration(k.duration_ns or 0)} is too short for the work to matter; nothing is busy "
                f"(SM {pct(compute or 0)}, memory {pct(memory or 0)} of peak).")
    if kind == "unknown":
        return "Not classified: the profile has no speed-of-light throughputs or work counts."
    if kind == "memory_bound":
        rate = (f"; DRAM moves {r.achieved_gbs:,.0f} of {r.peak_gbs:,.0f} GB/s" if r.achieved_gbs is not None
                and r.peak_gbs else "")
        return (f"Memory-bound: {_busiest_memory_unit(r)}{rate}{where}; only fewer or better-used bytes make it "
                "faster.")
    if kind == "compute_bound":
        rate = (f"{r.achieved_gflops / 1e3:,.1f} of {r.peak_gflops / 1e3:,.1f} TFLOP/s {r.precision}"
                if r.achieved_gflops is not None and r.peak_gflops else f"SM at {pct(compute or 0)}")
        return (f"Compute-bound: {rate}{where}, SM throughput {pct(r.throughput_pct.get('sm', compute or 0))}; "
                "only fewer or cheaper instructions make it faster.")
    if (memory or 0) >= BUSY_PCT and r.intensity_flop_per_byte and r.ridge_flop_per_byte:
        return (f"Latency-bound above the ridge: at {_intensity(r.intensity_flop_per_byte)} FLOP per DRAM byte (the "
                f"{r.precision} ridge point is {r.ridge_flop_per_byte:.0f}) the compute roof bounds it, yet the SM "
                f"reaches only {pct(compute or 0)} of peak ({_busiest_memory_unit(r)}, below where it limits); "
                "keep more math in flight: deeper pipelining of the tile loads, more warps or larger tiles per SM.")
    return (f"Latency-bound: no unit is busy (SM {pct(compute or 0)}, memory {pct(memory or 0)} of peak){where}; "
            "warps wait more than they work, so more parallelism in flight, not less work, is the lever.")
