"""The optimisation graph's state: plain, JSON-friendly data, so every step checkpoints to SQLite."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

RunStatus = Literal["running", "completed", "stopped", "failed"]


def merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Dict updates merge key by key: a node returns only the variants (or idea queues) it changed."""
    return {**(left or {}), **(right or {})}


class Draft(TypedDict):
    """A candidate written but not yet judged."""

    id: str
    parent_id: str
    idea: str
    origin: str  # "llm" or "recipe:<name>"
    source: str
    notes: str  # the coder's summary, or why the pre-judge checks still complain
    fixes: list[list[str]]  # compile errors the coder fixed on the way: [error, what it changed]


class OptimizeState(TypedDict, total=False):
    run_id: str
    policy: Literal["llm", "recipes"]
    variants: Annotated[dict[str, dict[str, Any]], merge]  # VariantTree.to_state()
    ideas: Annotated[dict[str, list[dict[str, Any]]], merge]  # variant id -> ideas not yet tried, best first
    exhausted: Annotated[list[str], operator.add]  # variants with nothing left to try
    selected: str | None  # the variant being expanded
    draft: Draft | None
    last: str | None  # the variant judged most recently
    iteration: int  # candidates judged
    elapsed_s: Annotated[float, operator.add]  # time spent inside nodes (a paused or killed run does not count)
    gpu_s: Annotated[float, operator.add]  # judge and profiler time on the GPU
    usage: dict[str, Any]  # UsageMeter.to_dict(): tokens and dollars per agent
    events: Annotated[list[str], operator.add]  # what happened, one line each, for the report and the terminal
    status: RunStatus
    stop_reason: str
