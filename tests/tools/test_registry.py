"""The agents' tools through their LangChain faces, each on its real backend."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage

from kernelpro.config import Settings
from kernelpro.tools.registry import ToolContext, tools_by_name
from tests.conftest import candidate, problem

GOOD_KERNEL = """
extern "C" __global__ void scale(const float* x, float* y, float s, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = tile[threadIdx.x] * s;
}
"""
BROKEN_KERNEL = 'extern "C" __global__ void k(float* x) {\n    x[threadIdx.x] = undefined_name;\n}\n'


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    settings = Settings()
    settings.compile.cache_dir = tmp_path_factory.mktemp("compile-cache")
    settings.cutlass.index_dir = tmp_path_factory.mktemp("cutlass-index")
    settings.memory.path = tmp_path_factory.mktemp("memory")
    settings.harness.timing_budget_s = 0.3
    settings.harness.timing_trials = 5
    settings.harness.min_timing_trials = 5
    context = ToolContext(settings, problem("scale_relu"), device="auto", run_id="run-test", gpu="NVIDIA H200")
    return tools_by_name(context)


def call(tools, tool: str, **args) -> ToolMessage:
    message = tools[tool].invoke({"name": tool, "args": args, "id": f"call-{tool}", "type": "tool_call"})
    assert isinstance(message, ToolMessage) and message.tool_call_id == f"call-{tool}"
    return message


def test_catalogue_has_schemas_and_descriptions(tools):
    assert {"compile_check", "resource_report", "judge_candidate", "gpu_specs", "cutlass_search",
            "cutlass_definition", "cutlass_usages", "cutlass_read", "cutlass_list", "cutlass_examples",
            "memory_search", "memory_write"} <= set(tools)
    for tool in tools.values():
        assert tool.description and tool.args_schema.model_json_schema()["properties"]


def test_compile_check_reports_resources_or_line_referenced_errors(tools):
    ok = call(tools, "compile_check", source=GOOD_KERNEL)
    assert "scale:" in ok.content and "registers" in ok.content and ok.artifact["ok"]
    broken = call(tools, "compile_check", source=BROKEN_KERNEL)
    assert "compile failed" in broken.content and "kernel.cu:2" in broken.content and "undefined_name" in broken.content
    assert broken.artifact["ok"] is False


def test_resource_report_gives_occupancy(tools):
    report = call(tools, "resource_report", source=GOOD_KERNEL, block_size=256)
    assert "occupancy" in report.content and "1024 B static shared" in report.content
    assert report.artifact["occupancy"]["scale"]["fraction"] > 0


def test_judge_candidate_returns_the_verdict(tools):
    verdict = call(tools, "judge_candidate", source=candidate("cheat_input_mutation"), timing=False)
    assert verdict.content.startswith("rejected (input_mutation)")
    assert verdict.artifact["status"] == "rejected"
    honest = call(tools, "judge_candidate", source=candidate("honest_scale_relu"))
    assert honest.content.startswith("ok") and honest.artifact["speedup"] > 0


def test_gpu_specs(tools):
    assert "108 SMs" in call(tools, "gpu_specs", name="A100").content
    assert "no specs known" in call(tools, "gpu_specs", name="Voodoo5").content


def test_cutlass_tools_read_the_real_source(tools):
    definition = call(tools, "cutlass_definition", symbol="cute::make_tiled_copy")
    assert "include/cute/atom/copy_atom.hpp" in definition.content
    usages = call(tools, "cutlass_usages", symbol="make_tiled_copy")
    assert "uses of 'make_tiled_copy'" in usages.content and usages.artifact.total_hits > 10
    assert "warpgroup_arrive" in call(tools, "cutlass_search", query="warpgroup_arrive").content
    assert "layout.hpp" in call(tools, "cutlass_list", path="include/cute").content
    assert "struct Layout" in call(tools, "cutlass_read", path="cute/layout.hpp", start=90, end=110).content
    assert "wgmma" in call(tools, "cutlass_examples", topic="wgmma").content.lower()


def test_memory_write_then_search(tools):
    saved = call(tools, "memory_write", text="For row softmax, one warp per row with shuffle reductions beat "
                 "shared-memory trees by 1.8x.", tags=["warp-shuffle", "softmax"])
    assert saved.content == "lesson saved"
    again = call(tools, "memory_write", text="For row softmax, one warp per row with shuffle reductions beat "
                 "shared-memory trees by 1.8x.", tags=["warp-shuffle", "softmax"])
    assert again.content == "already in memory"
    found = call(tools, "memory_search", query="row-wise reduction such as layernorm or softmax")
    assert "shuffle" in found.content


def test_failures_and_bad_arguments_come_back_as_messages(tools):
    escaped = call(tools, "cutlass_read", path="../../etc/passwd")
    assert "failed" in escaped.content and "CUTLASS tree" in escaped.content and escaped.artifact["error"]
    invalid = call(tools, "resource_report", source=GOOD_KERNEL, block_size=4096)
    assert invalid.content.startswith("invalid arguments") and "block_size" in invalid.content
    missing = call(tools, "cutlass_definition")
    assert missing.content.startswith("invalid arguments") and "symbol" in missing.content


def test_judge_candidate_uses_the_sessions_evaluator(tmp_path):
    from kernelpro.harness.judge import PipelineEvaluator

    settings = Settings()
    settings.compile.cache_dir = tmp_path / "cc"
    settings.harness.timing_budget_s = 0.3
    settings.harness.timing_trials = 5
    settings.harness.min_timing_trials = 5
    judge = PipelineEvaluator(settings, "cpu")
    try:
        tools = tools_by_name(ToolContext(settings, problem("scale_relu"), device="cpu", evaluator=judge))
        for _ in range(2):
            assert call(tools, "judge_candidate", source=candidate("honest_scale_relu")).content.startswith("ok")
        assert judge.stats.judged == 2 and judge.stats.worker_starts == 1 + len(judge.stats.restarts)
    finally:
        judge.close()


def test_a_cpu_run_is_offered_no_gpu_tools_and_no_made_up_gpu(settings):
    cpu = tools_by_name(ToolContext(settings, problem("scale_relu"), device="cpu", gpu="CPU (x86_64)"))
    assert not set(cpu) & {"compile_check", "resource_report", "static_report", "profile", "read_metrics",
                           "cutlass_search", "cutlass_read"}
    assert {"judge_candidate", "gpu_specs", "memory_search", "diagnose"} <= set(cpu)
    unnamed = call(cpu, "gpu_specs")
    assert "no GPU here" in unnamed.content and "SMs" not in unnamed.content
    assert "132 SMs" in call(cpu, "gpu_specs", name="H200").content  # a named GPU's figures, on request
