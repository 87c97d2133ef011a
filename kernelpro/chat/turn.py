"""A chat thread driven turn by turn, whatever shows it: a user's message through the graph, streamed as typed
events (the model's tokens, each finished model turn, each tool's result), the question before more GPU time, the
direct commands, and the user's stop.

The graph runs in a thread of its own (its nodes run in a pool, where a KeyboardInterrupt cannot reach them), so
the caller's thread stays free to show what comes and to stop it. ``cancel`` sets the answer's cancel event, which
the nodes and the model's token callback check; ``settle_stop`` then waits for a round of tool calls to end (a
judgment under way runs to its end; a model call is left behind after a moment) and writes what was said, each
open call answered as stopped.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, HumanMessage, ToolMessage

from kernelpro.chat import direct
from kernelpro.chat.graph import STOPPED, Cancelled
from kernelpro.chat.session import ChatSession

ABANDON_AFTER_S = 2.0


@dataclass(frozen=True)
class Token:
    """A piece of the model's reply, as it streams."""

    text: str


@dataclass(frozen=True)
class TurnEnded:
    """A model turn is complete (shown whole where it was not streamed); its tool calls, if any, run next."""

    message: AnyMessage | None


@dataclass(frozen=True)
class ToolReplied:
    """A tool call's result."""

    message: ToolMessage


@dataclass(frozen=True)
class ConfirmGpu:
    """The thread has spent ``chat.confirm_gpu_s``: run these tools on more GPU time? The stream ends here;
    ``Conversation.confirm`` goes on with the answer."""

    tools: list[str]


ChatEvent = Token | TurnEnded | ToolReplied | ConfirmGpu
GpuDecision = Literal["yes", "ask", "spent"]


class Conversation:
    """One thread's graph (compiled with its checkpointer) and session, driven one answer at a time."""

    def __init__(self, session: ChatSession, graph: Any, config: dict[str, Any]) -> None:
        self.session, self.graph, self.config = session, graph, config
        self._node = "agent"  # the node running now: a stop waits for a round of tools, not for a model call
        self._producer: threading.Thread | None = None

    def state(self) -> dict[str, Any]:
        return self.graph.get_state(self.config).values

    def spent(self) -> tuple[float, float]:
        """Dollars on model calls and seconds of judging and profiling, across resumes."""
        return self.session.usd_spent(), self.state().get("gpu_s", 0.0) or 0.0

    def gpu_decision(self) -> GpuDecision:
        """Whether more GPU time may be spent: ``spent`` once the budget is, ``ask`` past ``chat.confirm_gpu_s``
        (the user's word), else ``yes``."""
        _, gpu_s = self.spent()
        budget = self.session.budgets.gpu_s
        if budget is not None and gpu_s >= budget:
            return "spent"
        confirm = self.session.confirm_gpu_s
        return "yes" if confirm is None or gpu_s < confirm else "ask"

    # ---- an answer --------------------------------------------------------------------------------------------

    def say(self, text: str) -> Iterator[ChatEvent]:
        """The user's message, answered: the events of the answer, ending at its end or at a ``ConfirmGpu``. Raises
        ``Cancelled`` once the answer is cancelled, or the error that ended it (the thread is kept)."""
        return self._answer({"messages": [HumanMessage(text)]})

    def confirm(self, yes: bool) -> Iterator[ChatEvent]:
        """The answer to a ``ConfirmGpu``: the tools run (yes) or are refused (no), and the answer goes on."""
        from langgraph.types import Command

        return self._answer(Command(resume="yes" if yes else "no"))

    def _answer(self, feed: Any) -> Iterator[ChatEvent]:
        self._node = "agent"
        items: queue.Queue[tuple[str, Any]] = queue.Queue()

        def produce() -> None:
            try:
                for item in self.graph.stream(feed, self.config, context=self.session,
                                              stream_mode=["messages", "updates"], durability="sync"):
                    items.put(("item", item))
            except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
                items.put(("error", error))
            items.put(("done", None))

        self._producer = threading.Thread(target=produce, name="chat-answer", daemon=True)
        self._producer.start()
        while True:
            try:
                kind, payload = items.get(timeout=0.2)
            except queue.Empty:
                continue
            if kind == "done":
                break
            if kind == "error":
                raise payload
            yield from self._events(*payload)
        interrupts = self.graph.get_state(self.config).interrupts
        if interrupts:
            yield ConfirmGpu(list(interrupts[0].value.get("tools", [])))

    def _events(self, mode: str, chunk: Any) -> Iterator[ChatEvent]:
        if mode == "messages":
            message, metadata = chunk
            if metadata.get("langgraph_node") == "agent" and isinstance(message, (AIMessage, AIMessageChunk)):
                yield Token(message.text)
            return
        for node, values in chunk.items():
            messages = (values or {}).get("messages", []) if isinstance(values, dict) else []
            if node == "agent":
                last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
                for said in messages[:-1]:  # a reply that spent the budget, then the stop notice
                    yield TurnEnded(said)
                yield TurnEnded(last)
                self._node = "tools" if last is not None and last.tool_calls else "agent"
            elif node == "tools":
                for message in messages:
                    if isinstance(message, ToolMessage):
                        yield ToolReplied(message)
                self._node = "agent"

    # ---- the user's stop --------------------------------------------------------------------------------------

    def cancel(self) -> bool:
        """Stop the answer being written: a reply at its next token, a round of tool calls before its next call.
        Whether a round of tool calls is running (it finishes its call first)."""
        self.session.cancel.set()
        return self._node == "tools"

    def settle_stop(self, partial: str) -> None:
        """After ``cancel``: wait for a round of tools to end (a model call a moment, then it is left behind and
        its reply, when it comes, dropped), then keep what was said (``partial``: the reply streamed so far) with
        the open calls answered as stopped."""
        in_tools = self._node == "tools"
        deadline = time.monotonic() + ABANDON_AFTER_S
        while self._producer is not None and self._producer.is_alive() and (in_tools or time.monotonic() < deadline):
            try:
                self._producer.join(timeout=0.2)
            except KeyboardInterrupt:
                continue
        self.session.cancel = threading.Event()  # the next answer's; the stopped one keeps its own, set
        messages = self.state().get("messages", [])
        update: list[Any] = []
        last = messages[-1] if messages else None
        if isinstance(last, AIMessage) and last.tool_calls:
            update += [ToolMessage(STOPPED, tool_call_id=c["id"], name=c["name"], status="error")
                       for c in last.tool_calls]
        update.append(AIMessage((partial.rstrip() + "\n\n" if partial.strip() else "") + "(stopped by the user)"))
        self.graph.update_state(self.config, {"messages": update}, as_node="agent")

    # ---- the direct commands ----------------------------------------------------------------------------------

    def judge_file(self, path: Path) -> ToolMessage:
        """Judge a candidate file with the thread's judge; it becomes the current candidate."""
        return direct.judge_file(self.session, self.graph, self.config, path)

    def profile_file(self, path: Path | None) -> ToolMessage:
        """Profile the reference (``path`` None) or a candidate file, and diagnose it."""
        return direct.profile_file(self.session, self.graph, self.config, path)

    def current_diff(self) -> tuple[str, dict[str, Any] | None, str]:
        """The current candidate against the one before it (or the reference), its verdict, and its path."""
        state = self.state()
        diff, verdict = direct.current_diff(self.session, state)
        return diff, verdict, state["candidate"]


__all__ = ["ABANDON_AFTER_S", "Cancelled", "ChatEvent", "ConfirmGpu", "Conversation", "GpuDecision", "Token",
           "ToolReplied", "TurnEnded"]
