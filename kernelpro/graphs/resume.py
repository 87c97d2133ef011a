"""How a run that ended (stopped at a prompt, or a budget spent) goes on when it is resumed.

The graph of an ended run is at its end, so resuming it as it is would only repeat the outcome. ``go_on`` is the
command that sends it back into the loop: the status running again; the candidates the stop cut short before
their verdict (their code written, so already paid for) back in a batch; the finalists' re-judgments set aside,
since the final comparison has to include what the longer run finds (each finalist's second verdict is kept on
disk, so a finalist is never re-judged twice).
"""

from __future__ import annotations

from typing import Any

from langgraph.types import Command

from kernelpro.search.tree import VariantTree

CUT_SHORT = "the run stopped before it was judged"
"""Why ``finish`` fails the variants a stop left without a verdict."""


def go_on(graph: Any, config: dict[str, Any], why: str) -> None:
    """Send the ended run of ``graph`` (compiled, with its checkpointer) at ``config`` back into the loop: at the
    next batch, or at the batch the stop cut short. Streaming it with no input then runs it on.

    The route is written as ``finish``'s (``update_state``), not given as the next input: a ``Command`` input's
    route would be lost from the checkpoint at the first interrupt after it."""
    graph.update_state(config, continuation(graph.get_state(config).values, why), as_node="finish")


def continuation(state: dict[str, Any], why: str) -> Command:
    """What ``finish`` would have said to go on with: the state's changes and the next node."""
    tree = VariantTree.from_state(state.get("variants"))
    reopened = []
    for variant in tree:
        if variant.status == "failed" and variant.failure == CUT_SHORT and variant.source:
            variant.status, variant.failure = "pending", ""
            reopened.append(variant.id)
        variant.final = None
    events = [f"resumed: {why}" + (f"; {len(reopened)} candidate(s) the stop left unjudged are judged now"
                                   if reopened else "")]
    update = {"variants": tree.to_state(), "status": "running", "stop_reason": "", "events": events,
              "pending": reopened, "planning": [], "judged": []}
    return Command(goto="review_code" if reopened else "select", update=update)
