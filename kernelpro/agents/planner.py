"""The planner: from the variant's profile, earlier variants side by side and remembered lessons, ranked ideas."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import BaseModel, Field

from kernelpro.agents.protocol import AgentAnswer, ask
from kernelpro.agents.templates import fence, render


class Idea(BaseModel):
    title: str = Field(description="one line naming the optimisation")
    description: str = Field(description="what to change, specifically enough to implement in one candidate")
    rationale: str = Field(description="the measurement or diagnosis this idea answers")
    techniques: list[str] = Field(default_factory=list, description="short technique tags, e.g. tiling, fusion")
    expected_speedup: float | None = Field(None, description="your estimate of the speedup over the variant")

    def render(self) -> str:
        return f"{self.title}: {self.description} (why: {self.rationale})"


class Plan(BaseModel):
    analysis: str = Field(description="why the faster variants win and the slower ones lose, in a few sentences")
    ideas: list[Idea] = Field(min_length=1, description="ideas, most promising first")


class PlannerInput(BaseModel):
    problem_name: str
    problem_source: str
    device: str
    gpu: str
    variant_label: str
    variant_summary: str
    profile: str
    leaderboard: str
    leaderboard_heading: str = "Earlier variants, fastest first (speedup over the reference; failures say why)"
    """What the leaderboard ranks by: the run's objective (``search.objective``)."""
    variants_code: str = "none yet"
    recipes: str = "none apply here"
    """The built-in recipes that apply to this variant, one line each (``graphs.views.recipes_text``)."""
    lessons: str
    max_ideas: int = 4


def make_plan(model: BaseChatModel, view: PlannerInput, *, tools: Sequence[BaseTool] = (),
              mode: str = "auto") -> AgentAnswer:
    """Ask the planner for ranked ideas; `answer.output` is a `Plan` with at most `view.max_ideas` ideas."""
    scope = render("planner_device_cpu" if view.device == "cpu" else "planner_device_cuda", gpu=view.gpu)
    answer = ask(model, system=render("planner_system", device_scope=scope),
                 prompt=render("planner_task", **view.model_dump() | {"problem_source": fence(view.problem_source)}),
                 output=Plan, tools=tools, mode=mode)
    answer.output.ideas = answer.output.ideas[: view.max_ideas]
    return answer
