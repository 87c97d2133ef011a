"""What the agents are told: sources fenced so they cannot break out, the device as it is, measurements as measured."""

from __future__ import annotations

from langchain_core.messages import SystemMessage

from kernelpro.agents.coder import CoderInput, write_candidate
from kernelpro.agents.planner import PlannerInput, make_plan
from kernelpro.agents.protocol import FINAL_ANSWER
from kernelpro.agents.replies import fenced_blocks
from kernelpro.agents.templates import fence, render
from kernelpro.graphs.views import measurement_text, variants_code
from kernelpro.harness.result import EvalResult
from kernelpro.search.tree import VariantTree
from tests.conftest import problem
from tests.support.scripted_model import ScriptedChatModel, tool_call

# A module whose docstring holds a Markdown example: its ``` lines would close a fixed triple-backtick fence.
TRICKY = '''import torch


class Model(torch.nn.Module):
    """Doubles its input.

    ```python
    y = Model()(x)
    ```
    """

    def forward(self, x):
        return x * 2
'''
CANDIDATE = {"summary": "doubles", "code": "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"}


def coder_view(device: str) -> CoderInput:
    return CoderInput(problem_name="double", problem_source=TRICKY, device=device, gpu="CPU (x86_64)",
                      variant_label="the reference", parent_source=TRICKY + "\n# ```` four of them\n", idea="fuse")


def test_a_fence_is_longer_than_any_backtick_run_inside():
    assert fence("x = 1").startswith("```python\n")
    block = fence(TRICKY + "s = '````'\n")
    assert block.startswith("`````python\n") and block.endswith("\n`````")
    (parsed,) = fenced_blocks(block)
    assert parsed.closed and parsed.text == (TRICKY + "s = '````'").rstrip()


def test_the_coders_prompt_keeps_each_source_in_one_block():
    prompt = render("coder_task", **coder_view("cuda").prompt_values())
    blocks = [b for b in fenced_blocks(prompt) if b.lang == "python"]
    assert [b.text for b in blocks] == [TRICKY.rstrip(), (TRICKY + "\n# ```` four of them").rstrip()]


def _system_of(model: ScriptedChatModel) -> str:
    return next(m.content for m in model.requests[0].messages if isinstance(m, SystemMessage))


def test_on_the_cpu_the_coder_is_not_told_to_write_cuda():
    cpu, cuda = (ScriptedChatModel(script=[tool_call(FINAL_ANSWER, CANDIDATE)]) for _ in range(2))
    write_candidate(cpu, coder_view("cpu"), lambda _: [])
    write_candidate(cuda, coder_view("cuda"), lambda _: [])
    on_cpu, on_gpu = _system_of(cpu), _system_of(cuda)
    assert "CudaKernel" not in on_cpu and "compile_check" not in on_cpu and "cutlass_" not in on_cpu
    assert "runs on the CPU" in on_cpu and "no GPU" in on_cpu
    assert "CudaKernel" in on_gpu and "compile_check" in on_gpu


def test_on_the_cpu_the_planner_is_told_where_candidates_run():
    plan = {"analysis": "a", "ideas": [{"title": "t", "description": "d", "rationale": "r", "techniques": []}]}
    model = ScriptedChatModel(script=[tool_call(FINAL_ANSWER, plan)])
    view = PlannerInput(problem_name="double", problem_source=TRICKY, device="cpu", gpu="CPU (x86_64)",
                        variant_label="the reference", variant_summary="s", profile="not profiled",
                        leaderboard="none", lessons="none")
    make_plan(model, view)
    system = _system_of(model)
    assert "run on the CPU (CPU (x86_64))" in system and "no GPU on this machine" in system


def test_the_interpreter_is_shown_the_measurement_not_the_idea_again():
    tree = VariantTree.with_root(problem("scale_relu").source)
    variant = tree.spawn(tree.root.id, "class ModelNew: pass\n", "fuse relu and scale", "llm")
    variant.result = EvalResult(status="ok", correct=True, speedup=1.5, speedup_ci95=(1.4, 1.6),
                                speed_verdict="faster").model_dump(mode="json")
    prompt = render("interpreter_task", problem_name="p", gpu="NVIDIA H200", variant_label="v1",
                    idea=variant.idea, measurement=measurement_text(variant), findings="f")
    measured = next(line for line in prompt.splitlines() if line.startswith("Measured:"))
    assert "fuse relu and scale" not in measured and "1.50x" in measured
    assert measurement_text(tree.root).startswith("the PyTorch reference")


def test_the_planners_code_of_the_fastest_variants_keeps_each_source_in_one_block():
    tree = VariantTree.with_root(TRICKY)
    variant = tree.spawn(tree.root.id, TRICKY.replace("Model(", "ModelNew("), "rename", "llm")
    variant.record(EvalResult(status="ok", correct=True, speedup=1.2, speedup_ci95=(1.1, 1.3), speed_verdict="faster"))
    (block,) = fenced_blocks(variants_code(tree, 10_000))  # the leaderboard's one variant, its docstring inside
    assert block.lang == "python" and block.closed and block.text == variant.source.rstrip()
