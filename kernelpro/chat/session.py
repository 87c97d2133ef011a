"""What a chat needs but never checkpoints: the problem, the session's judge, the tools, the model, budgets.

``kernelpro.app.compose.build_chat_session`` builds it from the settings; the graph receives it as its runtime context.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from kernelpro.chat.files import ChatFiles
from kernelpro.config import Settings
from kernelpro.harness.ports import Evaluator
from kernelpro.problem import Problem
from kernelpro.tools.context import ToolContext

GPU_TOOLS = frozenset({"judge_candidate", "profile", "write_candidate"})
"""The tools that spend the judge's or the profiler's time: counted, held to the budget, confirmed beyond it."""


class ChatBudgets(BaseModel):
    usd: float | None = None  # model calls, across resumes
    gpu_s: float | None = None  # judge and profiler time, across resumes


@dataclass
class ChatSession:
    settings: Settings
    problem: Problem
    reference_path: Path
    device: str  # "cpu" or "cuda"
    gpu: str  # the device's name, for the prompt and memory records
    files: ChatFiles
    evaluator: Evaluator  # the session's judge: one long-lived worker for the whole chat
    tool_context: ToolContext
    tools: Mapping[str, BaseTool] = field(default_factory=dict)
    model: BaseChatModel | None = None  # None: no model configured; the direct commands still work
    meter: Any = None  # UsageMeter
    budgets: ChatBudgets = field(default_factory=ChatBudgets)
    tool_calling: str = ""  # how the model calls tools and why (``llm_probe.for_chat``), said once at the start
    candidate: Path | None = None  # the current candidate, synced from the state before each round of tools
    cancel: threading.Event = field(default_factory=threading.Event)  # set: stop the answer being written
    _bound: Any = None

    @property
    def confirm_gpu_s(self) -> float | None:
        return self.settings.chat.confirm_gpu_s

    def bound_model(self) -> Any:
        """The model with every tool bound (once)."""
        assert self.model is not None
        if self._bound is None:
            self._bound = self.model.bind_tools(list(self.tools.values()))
        return self._bound

    def usd_spent(self) -> float:
        return self.meter.spent_usd if self.meter is not None else 0.0

    def close(self) -> None:
        self.evaluator.close()
