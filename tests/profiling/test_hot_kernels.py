"""A kernel with a fifth or more of a program's GPU time never reads "no specific bottleneck": it gets what limits
it from its metrics (roofline position, speed of light, occupancy, ranked stalls with what to try). Programs here
are made of real H200 captures (tests/data/ncu): the LayerNorm/GELU program and planted kernels beside it.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

from kernelpro.profiling.collect import ProfileResult
from kernelpro.profiling.diagnose import HOT_KERNEL_SHARE, diagnose_program
from kernelpro.profiling.gpu_specs import lookup
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.ncu_command import STAGE1_METRICS
from kernelpro.profiling.ncu_csv import read_ncu_csv
from kernelpro.profiling.service import ProfiledProgram

NCU = Path(__file__).resolve().parents[2] / "tests" / "data" / "ncu"
GPU = lookup("NVIDIA H200")
NO_CAUSE = "No specific bottleneck found"


@cache
def planted(name: str) -> KernelMetrics:
    return read_ncu_csv(NCU / "planted" / f"{name}.csv")[0]


@cache
def layernorm_gelu() -> tuple[KernelMetrics, ...]:
    return tuple(read_ncu_csv(NCU / "programs" / "layernorm_gelu.csv"))


def as_stage_one(k: KernelMetrics) -> KernelMetrics:
    """A real `--set full` capture cut down to the metrics stage 1 asks ncu for (the default of `kernelpro profile
    --quick` and of optimisation runs). A count `x.sum` that the full set records as a rate per elapsed cycle is
    that rate times the elapsed cycles, which is what ncu reports for `x.sum`."""
    cycles = k.get("smsp__cycles_elapsed.avg")
    values = {}
    for metric in STAGE1_METRICS:
        if metric in k.values:
            values[metric] = k.values[metric]
        elif f"{metric}.per_cycle_elapsed" in k.values and cycles is not None:
            values[metric] = k.values[f"{metric}.per_cycle_elapsed"] * cycles
    return replace(k, values=values)


def hot_groups(program):
    return [g for g in program.kernels if g.share >= HOT_KERNEL_SHARE]


def test_the_hot_kernels_of_the_real_layernorm_gelu_program_are_diagnosed():
    for kernels in (layernorm_gelu(), tuple(as_stage_one(k) for k in layernorm_gelu())):
        program = diagnose_program(list(kernels), GPU)
        assert len(hot_groups(program)) == 2
        for group in hot_groups(program):
            text = group.diagnosis.render()
            assert group.diagnosis.findings and NO_CAUSE not in text, group.name


def test_a_hot_kernel_no_diagnoser_explains_gets_what_limits_it():
    # The real LayerNorm/GELU program with a real tensor-core GEMM beside it taking 74% of the time: no
    # diagnoser's rule matches that GEMM (it is healthy), yet it is where the time goes.
    program = diagnose_program([*layernorm_gelu(), planted("healthy_wmma_gemm")], GPU)
    gemm = program.kernels[0]
    assert gemm.name == "planted_healthy_wmma_gemm" and gemm.share > 0.7 and not gemm.diagnosis.findings
    text = gemm.diagnosis.render()
    assert NO_CAUSE not in text and "no bottleneck" not in text.lower()
    limiter = gemm.diagnosis.limiter
    assert limiter.title == "bound by L2 bandwidth at 73% of peak."
    assert [r.topic for r in limiter.readings] == ["roofline", "speed_of_light", "stalls", "occupancy"]
    roofline, sol, stalls, occupancy = limiter.readings
    assert "nearest roof L2 bandwidth at 73% of peak (27% from it)" in roofline.text and roofline.advice
    assert "SM 49.1% against memory 73% of peak, the memory side leads" in sol.text and "tensor" in sol.text
    assert stalls.text.startswith("Warp stalls, ranked: mio_throttle 23%")
    assert len(stalls.advice) == 3 and stalls.advice[0].startswith("mio_throttle (waiting for")
    assert "23.8% of warp slots filled against a theoretical 25%" in occupancy.text
    assert "What limits it" in text and "Warp stalls, ranked" in text
    assert gemm.to_dict()["limiter"]["title"] == limiter.title


def test_a_hot_latency_bound_kernel_leads_with_its_stalls():
    program = diagnose_program([planted("memory_latency_bound")], GPU, top=1)
    limiter = program.kernels[0].diagnosis.limiter
    assert limiter.title.startswith("latency-bound: nothing is near its roof") and "long_scoreboard" in limiter.title
    assert limiter.readings[0].topic == "stalls"


def test_a_cooler_kernel_without_a_cause_still_says_what_it_is_closest_to():
    program = diagnose_program([planted("tensor_cores_unused"), planted("compute_bound"),
                                planted("healthy_wmma_gemm")], GPU)
    gemm = next(g for g in program.kernels if g.name == "planted_healthy_wmma_gemm")
    assert gemm.share < HOT_KERNEL_SHARE
    text = gemm.diagnosis.render()
    assert NO_CAUSE in text and "it is closest to L2 bandwidth at 73% of peak" in text


def test_a_six_kernel_program_profiled_with_stage_one_names_its_two_hottest_kernels_causes():
    # Six real kernels as stage 1 sees them: the two hottest (an FP32 GEMM on the CUDA cores, an FMA loop) need
    # the pipes, instruction counts and stalls stage 1 now collects to be told anything.
    kernels = [as_stage_one(k) for k in (planted("tensor_cores_unused"), planted("compute_bound"),
                                         planted("healthy_wmma_gemm"), planted("memory_bound"), *layernorm_gelu())]
    program = diagnose_program(kernels, GPU)
    assert len(program.kernels) == 6
    first, second = program.kernels[:2]
    assert first.diagnosis.findings[0].id == "tensor_cores_unused"
    assert second.diagnosis.findings[0].id == "compute_bound"
    for group in hot_groups(program):
        assert NO_CAUSE not in group.diagnosis.render(), group.name


def test_the_headline_of_a_program_without_findings_is_its_hot_kernels_limiter():
    diagnosis = diagnose_program([planted("healthy_wmma_gemm")], GPU)
    profiled = ProfiledProgram(profile=ProfileResult(source="ncu", ok=True), diagnosis=diagnosis, gpu=GPU.name)
    assert profiled.headline == "planted_healthy_wmma_gemm: bound by L2 bandwidth at 73% of peak."
