"""Building and driving the optimisation graph in tests: scripted agents, the real CPU judge, real checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from kernelpro.app.compose import ROLE_TOOLS, candidate_checks, evaluator
from kernelpro.config import Settings
from kernelpro.graphs.context import Budgets, OptimizeContext
from kernelpro.graphs.optimize import builder
from kernelpro.llm.models import ROLE_KEY, UsageMeter
from kernelpro.runs.files import RunFiles
from kernelpro.search.policies import build_policy
from kernelpro.tools.registry import ToolContext, tools_by_name
from tests.conftest import problem
from tests.support.scripted_model import ScriptedChatModel, tool_call

HONEST = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.clamp(x, min=0.0) * self.scale
'''
WRONG = HONEST.replace("min=0.0", "min=0.5")
REUSES_MODEL = '''import torch.nn as nn


class ModelNew(Model):
    pass
'''


def plan_reply(*titles: str) -> Any:
    ideas = [{"title": t, "description": f"{t}, in one kernel", "rationale": "two passes over memory",
              "techniques": ["fusion"]} for t in titles]
    return tool_call("final_answer", {"analysis": "nothing to compare yet", "ideas": ideas})


def code_reply(source: str, summary: str = "clamp and scale in one expression") -> Any:
    return tool_call("final_answer", {"summary": summary, "code": source})


def review_reply(verdict: str = "credible", lesson: str = "Fusing ReLU and scale saves one pass.") -> Any:
    return tool_call("final_answer", {"verdict": verdict, "risks": [] if verdict == "credible" else
                                      ["output cached between calls"], "supports_idea": True,
                                      "lesson": lesson, "techniques": ["fusion"]})


def scripted_agents(meter: UsageMeter | None = None, **scripts: list[Any]) -> dict[str, ScriptedChatModel]:
    """One scripted model per role; roles without a script fail loudly if called."""
    roles = ("planner", "coder", "profiler_interpreter", "critic")
    return {role: ScriptedChatModel(script=list(scripts.get(role, [])), metadata={ROLE_KEY: role},
                                    callbacks=[meter] if meter is not None else None, usage={"input_tokens": 1000,
                                                                                             "output_tokens": 200})
            for role in roles}


OPEN_CONTEXTS: list[OptimizeContext] = []  # closed after each test (tests/graphs/conftest.py)


def make_context(settings: Settings, tmp_path: Path, models: dict | None, *, max_iters: int = 1,
                 interactive: bool = False, memory: Any = None, meter: UsageMeter | None = None,
                 time_s: float | None = None, usd: float | None = None,
                 problem_name: str = "repeated_relu", policy: str = "greedy") -> OptimizeContext:
    files = RunFiles.create(tmp_path / "runs", "run-test", {})
    available = tools_by_name(ToolContext(settings, problem(problem_name), device="cpu", run_id="run-test"))
    tools = {role: [available[name] for name in names if name in available] for role, names in ROLE_TOOLS.items()}
    context = OptimizeContext(
        tools=tools, settings=settings, problem=problem(problem_name), device="cpu", gpu="CPU test", files=files,
        policy=build_policy(policy, settings.search, uses_llm=models is not None),
        evaluate=evaluator(settings, "cpu"), models=models, meter=meter, memory=memory,
        budgets=Budgets(max_iters=max_iters, time_s=time_s, usd=usd), interactive=interactive,
        checks=candidate_checks(settings))
    OPEN_CONTEXTS.append(context)
    return context


def run(context: OptimizeContext, feed: Any = None, saver: Any = None, thread: str = "t") -> tuple[Any, dict]:
    """Run (or resume with `feed`) until the graph ends or interrupts; returns the compiled graph and its state."""
    graph = builder().compile(checkpointer=saver or InMemorySaver())
    config = {"configurable": {"thread_id": thread}, "recursion_limit": context.budgets.recursion_limit}
    graph.invoke(feed if feed is not None else {"run_id": "run-test"}, config, context=context)
    return graph, config


def results_log(context: OptimizeContext) -> list[dict]:
    path = context.files.results
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
