"""The critic: a second line of defence behind the judge's guards, and the writer of each attempt's lesson."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from kernelpro.agents.protocol import AgentAnswer, ask
from kernelpro.agents.templates import fence, render


class Review(BaseModel):
    verdict: Literal["credible", "suspicious", "wrong"] = Field(
        description="credible: the result stands; suspicious: a likely reward hack or a correctness risk the "
                    "tests may miss; wrong: the candidate cannot be right in general")
    risks: list[str] = Field(default_factory=list, description="correctness risks or suspected hacks, specific")
    supports_idea: bool = Field(description="whether the measured result supports the idea it tried")
    lesson: str = Field(description="one specific, transferable lesson grounded in the measurement")
    techniques: list[str] = Field(default_factory=list, description="technique tags for the search memory")


class CriticInput(BaseModel):
    problem_name: str
    problem_source: str
    device: str
    gpu: str
    variant_label: str
    idea: str
    candidate_source: str
    result: str
    profile: str


def review(model: BaseChatModel, view: CriticInput, *, tools: Sequence[BaseTool] = (),
           mode: str = "auto") -> AgentAnswer:
    values = view.model_dump() | {"problem_source": fence(view.problem_source),
                                  "candidate_source": fence(view.candidate_source)}
    return ask(model, system=render("critic_system"), prompt=render("critic_task", **values),
               output=Review, tools=tools, mode=mode)
