"""What every node of the optimisation graph shares: the tree from state, changed variants back, timing."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Command

from kernelpro.graphs.context import OptimizeContext
from kernelpro.graphs.state import OptimizeState
from kernelpro.llm.models import BudgetExceeded
from kernelpro.search.tree import VariantTree

Ctx = Runtime[OptimizeContext]


def tree_of(state: OptimizeState) -> VariantTree:
    return VariantTree.of_run(state)


def changed(tree: VariantTree, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The state entries of the variants a node touched (the reducer merges them into the rest)."""
    return {key: tree.get(key).model_dump(mode="json") for key in dict.fromkeys(ids)}


def usage(ctx: OptimizeContext) -> dict[str, Any]:
    return {"usage": ctx.meter.to_dict()} if ctx.meter is not None else {}


def node(fn: Callable[[OptimizeState, Ctx], Command]) -> Callable[[OptimizeState, Ctx], Command]:
    """Count the time spent in the node and turn a spent dollar budget into a clean stop."""

    @functools.wraps(fn)
    def timed(state: OptimizeState, runtime: Ctx) -> Command:
        start = time.monotonic()
        try:
            command = fn(state, runtime)
        except BudgetExceeded as spent:
            command = Command(goto="finish", update={"stop_reason": f"LLM budget spent: {spent}",
                                                     "status": "stopped", **usage(runtime.context)})
        update = dict(command.update or {})
        update["elapsed_s"] = update.get("elapsed_s", 0.0) + time.monotonic() - start
        return Command(goto=command.goto, update=update, graph=command.graph)

    return timed
