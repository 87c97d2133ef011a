"""The chat as a LangGraph tool-calling agent: messages state, a model node and a tool node.

    START -> agent -> tools -> agent -> ... -> END     (agent routes to tools while its reply calls tools)

The agent node answers with the session's model and every tool bound; without a model, or with the dollar budget
spent, it says so and ends. The tool node runs the calls through the session's tools (so judging goes through the
session's one long-lived judge), counts the time the judge and the profiler spend, refuses those calls once the
GPU budget is spent, and interrupts for the user's yes or no once the thread has spent ``chat.confirm_gpu_s``.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from kernelpro.agents.templates import render
from kernelpro.chat.prompts import system_prompt
from kernelpro.chat.session import GPU_TOOLS, ChatSession
from kernelpro.chat.state import ChatState
from kernelpro.llm.models import BudgetExceeded

STOPPED = "stopped by the user before it finished"


class Cancelled(Exception):
    """The user stopped the answer (``ChatSession.cancel``); the node's work so far is not checkpointed."""


_answer_cancel: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("answer_cancel", default=None)


class StopOnCancel(BaseCallbackHandler):
    """Ends a streamed model reply at its next token once the answer's ``cancel`` event (the one the agent node
    took from the session as it started) is set."""

    raise_error = True
    run_inline = True

    def on_llm_new_token(self, token: str, **kwargs: Any) -> None:
        cancel = _answer_cancel.get()
        if cancel is not None and cancel.is_set():
            raise Cancelled("stopped by the user")


def answered(messages: list[AnyMessage]) -> list[AnyMessage]:
    """The messages with a stand-in reply for every tool call left unanswered (an answer stopped mid-call), since
    a provider refuses a history with calls and no results."""
    out: list[AnyMessage] = []
    replied = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    for message in messages:
        out.append(message)
        if isinstance(message, AIMessage):
            out += [ToolMessage(STOPPED, tool_call_id=c["id"], name=c["name"], status="error")
                    for c in message.tool_calls if c["id"] not in replied]
    return out


def plain_artifact(value: Any) -> Any:
    """An artifact as plain JSON, so every checkpoint holds only data (pydantic models and dataclasses dumped)."""
    def default(obj: Any) -> Any:
        if hasattr(obj, "model_dump"):
            return obj.model_dump(mode="json")
        if hasattr(obj, "__dataclass_fields__"):
            import dataclasses

            return dataclasses.asdict(obj)
        return str(obj)

    return json.loads(json.dumps(value, default=default))


def usd_stop(session: ChatSession) -> str:
    """Why the dollar budget stops the agent, or ''."""
    spent, budget = session.usd_spent(), session.budgets.usd
    if budget is not None and spent >= budget:
        return f"model calls cost ${spent:.4f}, reaching this chat's budget of ${budget:.2f}"
    return ""


def _usage(session: ChatSession) -> dict[str, Any]:
    return {"usage": session.meter.to_dict()} if session.meter is not None else {}


def make_agent(default: Callable[[], ChatSession] | None) -> Callable[..., dict[str, Any]]:
    def agent(state: ChatState, runtime: Runtime[ChatSession]) -> dict[str, Any]:
        session = _session(runtime, default)
        if session.model is None:
            return {"messages": [AIMessage(render("chat_no_model"))], "stop_reason": "no model"}
        try:
            bound = session.bound_model()
        except NotImplementedError as error:  # a model without native tool calling
            name = getattr(session.model, "model", None) or type(session.model).__name__
            return {"messages": [AIMessage(render("chat_no_tools", model=name, error=error))],
                    "stop_reason": "no tool calling"}
        reason = usd_stop(session)
        if not reason:
            prompt = system_prompt(session, state.get("candidate", ""), state.get("gpu_s", 0.0))
            # This answer's event: a stopped answer whose reply comes late must not write it, whatever the
            # session's next answer does meanwhile (the terminal gives the session a fresh event).
            cancel = session.cancel
            _answer_cancel.set(cancel)
            _check(cancel)
            try:
                reply = bound.invoke([SystemMessage(prompt), *answered(state.get("messages", []))])
                _check(cancel)
            except BudgetExceeded as spent:
                reason = str(spent)
            else:
                reason = usd_stop(session)
                if reason:  # this reply spent the budget: its words are shown, its tool calls not run
                    said = [AIMessage(reply.content)] if reply.text.strip() else []
                    return {"messages": [*said, AIMessage(render("chat_budget_spent", reason=reason))],
                            "stop_reason": reason, **_usage(session)}
        if reason:
            return {"messages": [AIMessage(render("chat_budget_spent", reason=reason))], "stop_reason": reason,
                    **_usage(session)}
        return {"messages": [reply], "stop_reason": "", **_usage(session)}
    return agent


def spends_gpu(call: dict[str, Any]) -> bool:
    """Whether a tool call runs the judge or the profiler (a candidate only written, not judged, does not)."""
    return call["name"] in GPU_TOOLS and not (call["name"] == "write_candidate" and call["args"].get("judge") is False)


def _refusals(state: ChatState, session: ChatSession, calls: list[dict[str, Any]]) -> dict[str, str]:
    """Tool call id -> why it is not run: the GPU budget is spent, or the user said no to spending more."""
    spending = [c for c in calls if spends_gpu(c)]
    if not spending:
        return {}
    spent = state.get("gpu_s", 0.0)
    if session.budgets.gpu_s is not None and spent >= session.budgets.gpu_s:
        why = (f"not run: this chat's GPU budget of {session.budgets.gpu_s:.0f} s is spent ({spent:.0f} s); answer "
               "from the measurements you have")
        return {c["id"]: why for c in spending}
    if session.confirm_gpu_s is not None and spent >= session.confirm_gpu_s:
        answer = interrupt({"kind": "confirm_gpu", "tools": [c["name"] for c in spending], "spent_gpu_s": spent})
        if not (answer is True or str(answer).strip().lower() in ("y", "yes", "true")):
            return {c["id"]: "not run: the user declined to spend more GPU time on it; ask before trying again"
                    for c in spending}
    return {}


def make_tools(default: Callable[[], ChatSession] | None) -> Callable[..., dict[str, Any]]:
    def tools(state: ChatState, runtime: Runtime[ChatSession]) -> dict[str, Any]:
        session = _session(runtime, default)
        last = state["messages"][-1]
        calls = list(last.tool_calls) if isinstance(last, AIMessage) else []
        refused = _refusals(state, session, calls)  # before any call runs: an interrupt reruns this node
        cancel = session.cancel
        candidate, previous = state.get("candidate", ""), state.get("previous", "")
        session.candidate = _path(candidate)
        messages: list[ToolMessage] = []
        verdicts: dict[str, Any] = {}
        gpu_s = 0.0
        for call in calls:
            tool = session.tools.get(call["name"])
            if cancel.is_set():  # what ran is kept; the calls not started are answered as stopped
                messages.append(ToolMessage(STOPPED, tool_call_id=call["id"], name=call["name"], status="error"))
                continue
            if call["id"] in refused:
                messages.append(ToolMessage(refused[call["id"]], tool_call_id=call["id"], name=call["name"],
                                            status="error"))
                continue
            if tool is None:
                messages.append(ToolMessage(f"there is no tool {call['name']!r}; the tools are: "
                                            f"{', '.join(sorted(session.tools))}", tool_call_id=call["id"],
                                            name=call["name"], status="error"))
                continue
            start = time.monotonic()
            reply = tool.invoke({**call, "type": "tool_call"})
            if spends_gpu(call):
                gpu_s += time.monotonic() - start
            reply.artifact = plain_artifact(reply.artifact)
            if isinstance(reply.artifact, dict) and reply.artifact.get("error"):
                reply.status = "error"
            messages.append(reply)
            if call["name"] == "write_candidate" and isinstance(reply.artifact, dict) and reply.artifact.get("path"):
                previous, candidate = candidate, reply.artifact["path"]
                session.candidate = _path(candidate)
                if reply.artifact.get("verdict"):
                    verdicts[candidate] = reply.artifact["verdict"]
        return {"messages": messages, "gpu_s": gpu_s, "candidate": candidate, "previous": previous,
                "verdicts": verdicts}
    return tools


def _check(cancel: threading.Event) -> None:
    if cancel.is_set():
        raise Cancelled("stopped by the user")


def _path(text: str) -> Any:
    from pathlib import Path

    return Path(text) if text else None


def _session(runtime: Runtime[ChatSession], default: Callable[[], ChatSession] | None) -> ChatSession:
    if isinstance(runtime.context, ChatSession):
        return runtime.context
    if default is None:
        raise RuntimeError("the chat graph runs with a ChatSession as its context "
                           "(kernelpro.app.compose.build_chat_session)")
    return default()


def route(state: ChatState) -> str:
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def builder(default_session: Callable[[], ChatSession] | None = None) -> StateGraph:
    """The chat graph; ``default_session`` serves runs that bring no context (LangGraph Studio, which is then
    offered no context schema: a session holds models and workers, nothing a form could fill in)."""
    graph = StateGraph(ChatState, context_schema=None if default_session is not None else ChatSession)
    graph.add_node("agent", make_agent(default_session))
    graph.add_node("tools", make_tools(default_session))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph
