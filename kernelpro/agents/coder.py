"""The coder: one idea in, one complete KernelBench-format candidate out, checked before it reaches the judge."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from kernelpro.agents.protocol import AgentAnswer, ask
from kernelpro.agents.templates import fence, render


class CandidateCode(BaseModel):
    summary: str = Field(description="one sentence on what the candidate does")
    code: str = Field(description="the complete Python file defining ModelNew")


class CoderInput(BaseModel):
    problem_name: str
    problem_source: str
    device: str
    gpu: str
    variant_label: str
    parent_source: str
    idea: str
    feedback: str = ""  # e.g. the judge's verdict on the coder's previous try of the same idea

    def prompt_values(self) -> dict[str, str]:
        return self.model_dump() | {"problem_source": fence(self.problem_source),
                                    "parent_source": fence(self.parent_source)}


def coder_system(device: str) -> str:
    """The coder's instructions for where its candidate runs: CUDA and its tools on a GPU, PyTorch on the CPU."""
    return render("coder_system", how_to_write=render("coder_device_cpu" if device == "cpu" else "coder_device_cuda"))


class CodingOutcome(BaseModel):
    candidate: CandidateCode
    attempts: int
    problems: list[str] = Field(default_factory=list)  # what the pre-judge checks still report (empty: clean)
    compile_fixes: list[tuple[str, str]] = Field(default_factory=list)  # (error, summary of the fix)


def write_candidate(model: BaseChatModel, view: CoderInput, check: Callable[[str], list[str]], *,
                    tools: Sequence[BaseTool] = (), mode: str = "auto", max_attempts: int = 3,
                    on_answer: Callable[[AgentAnswer], None] | None = None) -> CodingOutcome:
    """Write the candidate and let the coder fix what `check` reports (static guards, compile errors).

    `check` returns human-readable problems, empty when the candidate may go to the judge. The coder keeps its
    conversation across fixes, so it sees its own code and each error.
    """
    answer = ask(model, system=coder_system(view.device), prompt=render("coder_task", **view.prompt_values()),
                 output=CandidateCode, tools=tools, mode=mode)
    fixes: list[tuple[str, str]] = []
    for attempt in range(1, max_attempts + 1):
        if on_answer:
            on_answer(answer)
        problems = check(answer.output.code)
        if not problems or attempt == max_attempts:
            return CodingOutcome(candidate=answer.output, attempts=attempt, problems=problems, compile_fixes=fixes)
        errors = "\n\n".join(problems)
        answer = ask(model, system=coder_system(view.device),
                     prompt=render("coder_fix", errors=errors, attempt=attempt + 1, max_attempts=max_attempts),
                     output=CandidateCode, tools=tools, mode=mode, history=answer.messages)
        fixes.append((errors, answer.output.summary))
    raise AssertionError("unreachable")
