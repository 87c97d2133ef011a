"""The profiling tools through their LangChain faces: real H200 profiles, real nvcc, real torch.profiler."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpro.config import Settings
from kernelpro.tools.registry import ToolContext, tools_by_name
from tests.conftest import DATA, problem
from tests.tools.test_registry import GOOD_KERNEL, call

NCU = DATA / "ncu"
PLANTED = NCU / "planted"
LOCAL_ARRAY = """
extern "C" __global__ void local_array(const float* x, float* y, const int* idx, int n) {
    float acc[64];
    for (int k = 0; k < 64; ++k) acc[k] = x[(threadIdx.x + k) % n];
    y[threadIdx.x] = acc[idx[threadIdx.x] & 63];  // a runtime index: the array lives in local memory
}
"""


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    settings = Settings()
    settings.compile.cache_dir = tmp_path_factory.mktemp("compile-cache")
    return ToolContext(settings, problem("scale_relu"), device="auto", run_id="run-test", gpu="NVIDIA H200")


@pytest.fixture(scope="module")
def tools(context):
    return tools_by_name(context)


def test_diagnose_a_saved_profile_names_the_planted_bottleneck(tools):
    reply = call(tools, "diagnose", ncu_csv=str(PLANTED / "smem_bank_conflicts.csv"))
    assert "on NVIDIA H200" in reply.content
    assert "smem_bank_conflicts" in reply.content and "[32][33]" in reply.content
    kernel = reply.artifact["kernels"][0]
    assert kernel["name"] == "planted_smem_bank_conflicts"
    assert kernel["findings"][0]["id"] == "smem_bank_conflicts"


def test_diagnose_reads_a_report_with_ncu_rules(tools):
    reply = call(tools, "diagnose", ncu_rep=str(DATA / "ncu" / "reports" / "memory_bound.ncu-rep"))
    assert reply.artifact["kernels"][0]["findings"][0]["id"] == "memory_bound"


def test_diagnose_without_a_profile_says_what_to_give(tools):
    reply = call(tools, "diagnose")
    assert "diagnose failed" in reply.content and "--ncu-csv" in reply.content


def test_read_metrics_by_prefix_from_a_saved_profile(tools):
    reply = call(tools, "read_metrics", metrics=["launch__occupancy_limit_registers", "launch__registers"],
                 profile=str(PLANTED / "occupancy_limited_registers.csv"))
    assert reply.artifact["values"]["launch__occupancy_limit_registers"] == 2
    assert "launch__registers_per_thread" in reply.content


def test_read_metrics_uses_the_latest_profile_and_explains_unknown_names(tools, context):
    context.latest_profile = PLANTED / "memory_bound.csv"
    reply = call(tools, "read_metrics", metrics=["gpu__time_duration.sum"])
    assert reply.artifact["kernel"] == "planted_memory_bound"
    assert reply.artifact["values"]["gpu__time_duration.sum"] == pytest.approx(181856.0)
    missing = call(tools, "read_metrics", metrics=["no_such_metric"])
    assert "read_metrics failed" in missing.content and "names look like" in missing.content


def test_read_metrics_before_any_profile(tmp_path):
    fresh = tools_by_name(ToolContext(Settings(), problem("scale_relu"), device="auto"))
    assert "call profile first" in call(fresh, "read_metrics", metrics=["dram__"]).content


def test_static_report_shows_local_memory_and_occupancy(tools):
    reply = call(tools, "static_report", source=LOCAL_ARRAY, backend="nvcc", block_size=256)
    assert "local memory" in reply.content and "STL" in reply.content
    clean = call(tools, "static_report", source=GOOD_KERNEL, block_size=256)
    assert "occupancy" in clean.content and "local memory" not in clean.content


def test_profile_without_a_gpu_falls_back_to_torch_profiler(tools):
    reply = call(tools, "profile")
    assert "No Nsight Compute metrics" in reply.content
    assert reply.artifact["profile"]["source"] == "torch.profiler"
    assert any("relu" in e["name"] for e in reply.artifact["profile"]["events"])


def test_every_profiling_tool_is_in_the_catalogue(tools):
    assert {"profile", "diagnose", "read_metrics", "static_report"} <= set(tools)
    assert Path(PLANTED).is_dir()


def test_report_details_by_section_and_kernel(tools):
    report = str(NCU / "reports" / "smem_bank_conflicts.ncu-rep")
    found = call(tools, "report_details", report=report, section="Occupancy", kernel="smem")
    assert "Occupancy (Occupancy)" in found.content and "Achieved Occupancy" in found.content
    assert [s["id"] for s in found.artifact[0]["sections"]] == ["Occupancy"]
    missing = call(tools, "report_details", report=report, section="NoSuchSection")
    assert "no section 'NoSuchSection'" in missing.content


def test_ncu_sections_and_rules_of_a_report(tools):
    report = str(NCU / "reports" / "memory_bound.ncu-rep")
    sections = call(tools, "ncu_sections", report=report)
    assert "SpeedOfLight | GPU Speed Of Light Throughput" in sections.content
    rules = call(tools, "ncu_rules", report=report)
    assert "SOLBottleneck" in rules.content and rules.artifact["rules"]
