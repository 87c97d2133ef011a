"""The profiler-interpreter: reads the micro-profiling tools' findings and writes the reading the planner uses."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from kernelpro.agents.protocol import AgentAnswer, ask
from kernelpro.agents.templates import render


class ProfileReading(BaseModel):
    """The interpreter's reading of a profile: what limits the kernel now, and what to try."""

    limiter: str = Field(description="what limits the kernel now, named plainly (e.g. 'uncoalesced global loads')")
    evidence: list[str] = Field(description="the two or three measurements that show it")
    next_steps: list[str] = Field(description="what to try next, most promising first")

    def render(self) -> str:
        lines = [f"Limiter: {self.limiter}"]
        lines += [f"- evidence: {e}" for e in self.evidence]
        lines += [f"- try: {s}" for s in self.next_steps]
        return "\n".join(lines)


class InterpreterInput(BaseModel):
    problem_name: str
    gpu: str
    variant_label: str
    idea: str
    measurement: str
    findings: str


def interpret(model: BaseChatModel, view: InterpreterInput, *, tools: Sequence[BaseTool] = (),
              mode: str = "auto") -> AgentAnswer:
    return ask(model, system=render("interpreter_system"), prompt=render("interpreter_task", **view.model_dump()),
               output=ProfileReading, tools=tools, mode=mode)
