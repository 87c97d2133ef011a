"""The optimisation graph's state: plain, JSON-friendly data, so every step checkpoints to SQLite.

Nodes return only what they changed: ``variants`` merges key by key (the variants a node touched), and the
parallel coder branches of one batch each return their own variant.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict  # pydantic (Studio's schemas) refuses typing's before Python 3.12

RunStatus = Literal["running", "completed", "stopped", "failed"]
IdeaSource = Literal["llm", "recipes"]


def merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Dict updates merge key by key: a node returns only the variants it changed."""
    return {**(left or {}), **(right or {})}


def latest_usage(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """The meter's latest snapshot: parallel branches share one meter, so the one that counted most is newest."""
    def spent(usage: dict[str, Any] | None) -> tuple[float, int]:
        total = (usage or {}).get("total", {})
        return total.get("cost_usd", 0.0), total.get("prompt_tokens", 0) + total.get("completion_tokens", 0)

    return right if right is not None and spent(right) >= spent(left) else (left or {})


class OptimizeState(TypedDict, total=False):
    run_id: str
    idea_source: IdeaSource  # where ideas come from: the language model's planner, or the built-in recipes
    search_policy: str  # the policy's name (``search.policies``)
    objective: str  # what the reward and the best follow (``search.objective``): time, energy or edp
    scorecard: str  # under time, which reading of the speedup decides (``search.scorecard``)
    min_effect: float  # ``harness.min_effect``, at which a ``kernelbench`` call is made
    variants: Annotated[dict[str, dict[str, Any]], merge]  # VariantTree.to_state(), a node's changes merged in
    planning: list[str]  # variants waiting for a plan (the policy asked for ideas)
    pending: list[str]  # the batch: children born from this step's expansions, waiting for code and verdicts
    reviewed: list[str]  # of the batch, the candidates the user approved or edited: not asked again on --resume
    judged: list[str]  # the batch's variants that got a verdict, for profile, interpret, critique, observe
    iteration: int  # candidates with a verdict (the last one's sequence number)
    answered_before: int  # of those, answered from verdicts taken before the run (free: not counted by max_iters)
    elapsed_s: Annotated[float, operator.add]  # time spent inside nodes (a paused or killed run does not count)
    gpu_s: Annotated[float, operator.add]  # judge and profiler time on the GPU
    usage: Annotated[dict[str, Any], latest_usage]  # UsageMeter.to_dict(): tokens and dollars per agent
    events: Annotated[list[str], operator.add]  # what happened, one line each, for the report and the terminal
    status: RunStatus
    stop_reason: str
    reference_error: str  # the reference's own failure (its forward raises): the problem file cannot be used
    too_big: str  # why the problem cannot be judged within this machine's memory (harness.footprint)
