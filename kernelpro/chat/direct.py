"""What the person runs without the model (``/judge``, ``/profile``): the same tools through the same session
judge, written into the thread so the agent sees what was measured and the budgets count it."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from kernelpro.chat.session import ChatSession
from kernelpro.chat.verdict import unified_diff

_ids = itertools.count(1)


def _run(session: ChatSession, name: str, args: dict[str, Any]) -> tuple[ToolMessage, float]:
    from kernelpro.chat.graph import plain_artifact

    start = time.monotonic()
    reply = session.tools[name].invoke({"name": name, "args": args, "id": f"direct-{next(_ids)}",
                                        "type": "tool_call"})
    reply.artifact = plain_artifact(reply.artifact)
    return reply, time.monotonic() - start


def _record(graph: Any, config: dict[str, Any], update: dict[str, Any]) -> None:
    # As the agent's output: the route from it sees no tool call and ends, so nothing runs until the next message.
    graph.update_state(config, update, as_node="agent")


def judge_file(session: ChatSession, graph: Any, config: dict[str, Any], path: Path) -> ToolMessage:
    """Judge a candidate file; it becomes the current candidate."""
    source = path.read_text()
    reply, seconds = _run(session, "judge_candidate", {"source": source})
    state = graph.get_state(config).values
    note = HumanMessage(f"(I ran /judge {path}; it is now the current candidate. The judge said:)\n{reply.content}")
    current = str(path.resolve())
    update: dict[str, Any] = {"messages": [note], "gpu_s": seconds, "candidate": current}
    if state.get("candidate", "") != current:  # judged again, the same file keeps what it is compared against
        update["previous"] = state.get("candidate", "")
    if isinstance(reply.artifact, dict) and reply.artifact.get("status"):
        update["verdicts"] = {str(path.resolve()): reply.artifact}
    _record(graph, config, update)
    return reply


def profile_file(session: ChatSession, graph: Any, config: dict[str, Any], path: Path | None) -> ToolMessage:
    """Profile the reference (``path`` None) or a candidate file, and diagnose it."""
    reply, seconds = _run(session, "profile", {"source": path.read_text() if path else None})
    what = str(path) if path else "the reference"
    note = HumanMessage(f"(I ran /profile on {what}. The profiler said:)\n{reply.content}")
    _record(graph, config, {"messages": [note], "gpu_s": seconds})
    return reply


def current_diff(session: ChatSession, state: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The current candidate against the one before it (or the reference), and its verdict when it has one."""
    candidate = state.get("candidate", "")
    if not candidate:
        raise ValueError("there is no candidate yet: /judge FILE, or ask for one")
    new = Path(candidate)
    previous = state.get("previous", "")
    old_text = Path(previous).read_text() if previous else session.problem.source
    old_name = Path(previous).name if previous else session.reference_path.name
    diff = unified_diff(old_text, new.read_text(), old_name, new.name)
    return diff, latest_verdict(state, new)


def latest_verdict(state: dict[str, Any], candidate: Path) -> dict[str, Any] | None:
    """The newest verdict recorded in the thread for ``candidate``, if it was judged."""
    return (state.get("verdicts") or {}).get(str(candidate))
