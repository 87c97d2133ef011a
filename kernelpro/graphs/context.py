"""What the optimisation graph needs but never checkpoints: settings, models, the judge, the profiler, memory.

The graph reaches the GPU only through `Evaluator` and `Profiler`, so it does not know whether candidates are
judged in a local worker or elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from kernelpro.config import Settings
from kernelpro.graphs.run_files import RunFiles
from kernelpro.harness.result import EvalResult
from kernelpro.problem import Problem
from kernelpro.search.policy import SearchPolicy


class Evaluator(Protocol):
    def __call__(self, problem: Problem, source: str) -> EvalResult: ...
    def rejudge(self, problem: Problem, sources: Sequence[str]) -> list[EvalResult]:
        """Judge the finalists again, head to head with the reference, with more rounds."""
        ...
    def close(self) -> None: ...


class ProfileReport(BaseModel):
    """What the micro-profiling tools said about one candidate."""

    text: str  # the rendered findings, for the interpreter (or, without an LLM, the diagnosis itself)
    finding_ids: list[str]  # ranked
    headline: str  # one line: the top finding
    gpu_s: float = 0.0
    data: dict[str, Any] = {}  # the full diagnosis as JSON, for the read_metrics tool and the report


class Profiler(Protocol):
    def __call__(self, problem: Problem, source: str) -> ProfileReport | None: ...


class Memory(Protocol):
    def lessons(self, problem: Problem, query: str) -> str: ...
    def remember(self, records: Sequence[Any]) -> int: ...


class Budgets(BaseModel):
    max_iters: int = 8  # candidates judged
    time_s: float | None = None  # time spent working (nodes), across resumes
    gpu_s: float | None = None
    usd: float | None = None

    @property
    def recursion_limit(self) -> int:
        # at most ~10 steps per judged candidate, plus retries of empty plans; always bounded
        return self.max_iters * 12 + 40


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
    tools: Mapping[str, Sequence[BaseTool]] = field(default_factory=dict)  # role -> tools it may call
    tool_mode: str = "auto"
    interactive: bool = False
    coder_attempts: int = 3
    checks: Callable[[str], list[str]] | None = None  # pre-judge checks of a candidate (static guards, compile)

    @property
    def uses_llm(self) -> bool:
        return self.models is not None

    def model(self, role: str) -> BaseChatModel:
        assert self.models is not None
        return self.models[role]

    def tools_for(self, role: str) -> Sequence[BaseTool]:
        return self.tools.get(role, ())

    @property
    def run_dir(self) -> Path:
        return self.files.root
