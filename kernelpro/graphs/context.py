"""What the optimisation graph needs but never checkpoints: settings, models, the ports, the policy.

The graph reaches the GPU and the memory only through the ports of ``harness.ports`` (``Evaluator``,
``Profiler``, ``Memory``, ``Gate``), so it does not know whether candidates are judged in a local worker or
elsewhere. ``kernelpro.app.compose`` builds this context from the settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from kernelpro.config import Settings
from kernelpro.harness.ports import Evaluator, Gate, MeasureAll, Memory, Profiler, ProfileReport
from kernelpro.problem import Problem
from kernelpro.runs.files import RunFiles
from kernelpro.runs.spec import Budgets
from kernelpro.search.policy import SearchPolicy

__all__ = ["Budgets", "Evaluator", "Gate", "Memory", "OptimizeContext", "ProfileReport", "Profiler"]


@dataclass
class OptimizeContext:
    settings: Settings
    problem: Problem
    device: str  # "cpu" or "cuda"
    gpu: str  # the device's name, for prompts and memory records
    files: RunFiles
    policy: SearchPolicy
    evaluate: Evaluator
    budgets: Budgets = field(default_factory=Budgets)
    models: Mapping[str, BaseChatModel] | None = None  # role -> model; None runs the built-in recipes
    meter: Any = None  # UsageMeter: tokens and dollars, raises BudgetExceeded
    profile: Profiler | None = None
    memory: Memory | None = None
    gate: Gate = field(default_factory=MeasureAll)
    tools: Mapping[str, Sequence[BaseTool]] = field(default_factory=dict)  # role -> tools it may call
    tool_mode: str = "auto"
    tool_calling: str = ""  # how the agents call tools and why (llm_probe.resolve), for the run's first lines
    interactive: bool = False
    coder_attempts: int = 3
    checks: Callable[[str], list[str]] | None = None  # pre-judge checks of a candidate (static guards, compile)

    @property
    def uses_llm(self) -> bool:
        return self.models is not None

    @property
    def idea_source(self) -> str:
        """The planner's ideas with a model (unless the policy is the recipes), the built-in recipes without."""
        return "llm" if self.uses_llm and self.policy.name != "recipes" else "recipes"

    @property
    def no_profile_reason(self) -> str:
        return "" if self.profile is not None else (
            "not profiled: Nsight Compute profiles need a GPU" if self.device != "cuda" else
            "not profiled: profiling is off in this run")

    def model(self, role: str) -> BaseChatModel:
        assert self.models is not None
        return self.models[role]

    def tools_for(self, role: str) -> Sequence[BaseTool]:
        return self.tools.get(role, ())

    @property
    def run_dir(self) -> Path:
        return self.files.root
