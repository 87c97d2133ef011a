"""How an agent calls a model: a tool loop, then a typed answer, with malformed replies repaired.

Two ways, the same result (``AgentAnswer``):

- native: the tools are bound with ``bind_tools`` and the answer is one more tool, ``final_answer``, whose
  arguments are the output schema. A tool rather than a JSON block because the provider then receives the schema
  as a schema (many constrain or check tool arguments against it), the loop has one exit, and an answer that does
  not validate goes back as that tool's error, where models are trained to look. A plain-text reply holding a
  valid JSON answer is accepted too, since some models answer in text despite the tools.
- text, for models without tool calling: the system prompt describes the tools and a small protocol of fenced
  blocks (```tool calls, a ```json answer, code in its own ```python / ```cuda blocks referenced as ``"@python:1"``
  so long code is never JSON-escaped); see ``prompts/text_protocol.md`` and ``replies.py``.

Tool failures come back to the model as messages, never as exceptions. A reply that cannot be used gets a repair
prompt quoting the exact error, at most ``max_repairs`` times; then ``MalformedReply`` is raised.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ValidationError

from kernelpro.agents.replies import (
    ReplyError,
    describe_validation_error,
    fenced_blocks,
    parse_answer,
    tool_requests,
)
from kernelpro.agents.templates import render
from kernelpro.llm.models import supports_native_tools

T = TypeVar("T", bound=BaseModel)
Mode = Literal["auto", "native", "text"]
FINAL_ANSWER = "final_answer"


@dataclass
class ToolCallRecord:
    """One tool call the model made and what it got back (``artifact``: the tool's full data, if any)."""

    id: str
    name: str
    args: dict[str, Any]
    content: str
    artifact: Any = None
    ok: bool = True


@dataclass
class AgentAnswer(Generic[T]):
    """The typed answer, and the conversation after the system prompt (pass it back as ``history`` to go on)."""

    output: T
    messages: list[BaseMessage]
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    repairs: int = 0
    mode: Literal["native", "text"] = "native"


class MalformedReply(RuntimeError):
    """The model's replies stayed unusable after every repair prompt."""

    def __init__(self, error: str, last_reply: str, messages: list[BaseMessage]) -> None:
        super().__init__(f"the model's reply stayed malformed after repairs: {error}")
        self.error = error
        self.last_reply = last_reply
        self.messages = messages


def _text(message: BaseMessage) -> str:
    return message.text if isinstance(message.content, list) else str(message.content or "")


def _run_tool(tools: dict[str, BaseTool], call_id: str, name: str, args: dict[str, Any]) -> ToolCallRecord:
    tool = tools.get(name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return ToolCallRecord(call_id, name, args, f"no tool named {name!r}; the tools are: {known}", ok=False)
    try:
        reply = tool.invoke({"type": "tool_call", "id": call_id, "name": name, "args": args})
    except Exception as error:  # noqa: BLE001 - a failing tool is news for the model, not the end of the run
        return ToolCallRecord(call_id, name, args, f"{name} failed: {type(error).__name__}: {error}", ok=False)
    content = reply.content if isinstance(reply, ToolMessage) else reply
    content = content if isinstance(content, str) else json.dumps(content, default=str)
    artifact = getattr(reply, "artifact", None)
    failed = getattr(reply, "status", "success") == "error" or (isinstance(artifact, dict) and "error" in artifact)
    return ToolCallRecord(call_id, name, args, content, artifact, ok=not failed)


class _Exchange:
    """The state of one ``ask``: the conversation, the tool calls made, the steps and repairs spent."""

    def __init__(self, tools: Sequence[BaseTool], history: Sequence[BaseMessage] | None, prompt: str,
                 max_tool_steps: int, max_repairs: int) -> None:
        self.tools = {tool.name: tool for tool in tools}
        # A system message in the history is dropped: every call sends its own.
        self.messages = [m for m in (history or ()) if not isinstance(m, SystemMessage)] + [HumanMessage(prompt)]
        self.records: list[ToolCallRecord] = []
        self.steps = self.repairs = 0
        self.max_tool_steps, self.max_repairs = max_tool_steps, max_repairs

    def repair(self, error: str, last_reply: str) -> None:
        self.repairs += 1
        if self.repairs > self.max_repairs:
            raise MalformedReply(error, last_reply, self.messages)

    def run(self, call_id: str, name: str, args: dict[str, Any]) -> ToolCallRecord:
        record = _run_tool(self.tools, call_id, name, args)
        self.records.append(record)
        return record

    def answer(self, output: T, mode: Literal["native", "text"]) -> AgentAnswer[T]:
        return AgentAnswer(output, self.messages, self.records, self.repairs, mode)


def _final_answer_spec(output: type[BaseModel]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": FINAL_ANSWER, "parameters": output.model_json_schema(),
                                             "description": render("final_answer_tool")}}


def _native(bound: Runnable, system: str, output: type[T], ex: _Exchange) -> AgentAnswer[T]:
    while True:
        reply = bound.invoke([SystemMessage(system), *ex.messages])
        ex.messages.append(reply)
        calls = list(getattr(reply, "tool_calls", None) or [])
        broken = list(getattr(reply, "invalid_tool_calls", None) or [])
        for n, call in enumerate(calls):  # some servers send no ids; a ToolMessage needs one
            call["id"] = call.get("id") or f"call-{len(ex.messages)}-{n}"
        if not calls and not broken:
            try:
                return ex.answer(parse_answer(_text(reply), output), "native")
            except ReplyError as error:
                problem = f"no {FINAL_ANSWER} call, and no usable JSON answer in the text ({error})"
            ex.repair(problem, _text(reply))
            ex.messages.append(HumanMessage(render("repair", error=problem, instructions=render("repair_native"))))
            continue
        # Every well-formed call gets a ToolMessage, or the provider rejects the conversation: id -> (content, error).
        # Calls with unreadable arguments are not sent back as calls, so their errors go in a message of their own.
        replies: dict[str, tuple[str, str | None]] = {}
        unreadable = [f"{c.get('name')}: the arguments are not valid JSON ({c.get('error') or c.get('args')})"
                      for c in broken]
        finals = [c for c in calls if c["name"] == FINAL_ANSWER]
        others = [c for c in calls if c["name"] != FINAL_ANSWER]
        answer = None
        for call in finals[:-1]:
            replies[call["id"]] = ("ignored: only the last final_answer counts", None)
        if finals:
            try:
                answer = output.model_validate(finals[-1]["args"])
                replies[finals[-1]["id"]] = ("accepted", None)
            except ValidationError as error:
                problem = f"the answer does not match the schema: {describe_validation_error(error)}"
                replies[finals[-1]["id"]] = (render("repair", error=problem,
                                                    instructions=render("repair_native")), problem)
        problems = unreadable + [problem for _, problem in replies.values() if problem]
        if answer is not None and not problems:
            replies |= {c["id"]: (render("skipped_tool"), None) for c in others}
        elif others and ex.steps >= ex.max_tool_steps:
            limit = render("tool_limit", max_tool_steps=ex.max_tool_steps)
            replies |= {c["id"]: (limit, limit) for c in others}
            problems.append(limit)
        elif others:
            ex.steps += 1
            for call in others:
                record = ex.run(call["id"], call["name"], call["args"])
                replies[call["id"]] = (record.content, None if record.ok else "")
        for call in calls:
            content, problem = replies[call["id"]]
            ex.messages.append(ToolMessage(content, tool_call_id=call["id"], name=call["name"],
                                           status="success" if problem is None else "error"))
        if unreadable:
            ex.messages.append(HumanMessage(render("repair", error="; ".join(unreadable),
                                                   instructions=render("repair_native"))))
        if answer is not None and not problems:
            return ex.answer(answer, "native")
        if problems:
            ex.repair("; ".join(problems), _text(reply))


def _describe_tools(tools: Sequence[BaseTool]) -> str:
    entries = []
    for tool in tools:
        parameters = convert_to_openai_tool(tool)["function"].get("parameters", {})
        entries.append(f"- `{tool.name}`: {tool.description}\n  arguments: {json.dumps(parameters)}")
    return "\n".join(entries)


def text_system_prompt(system: str, output: type[BaseModel], tools: Sequence[BaseTool]) -> str:
    """The system prompt of the text protocol: the agent's own, then the tools and the reply format."""
    tools_section = render("text_protocol_tools", tools=_describe_tools(tools)) if tools else ""
    protocol = render("text_protocol", tools_section=tools_section,
                      schema=json.dumps(output.model_json_schema(), indent=2))
    return f"{system.rstrip()}\n\n{protocol}"


def _text_loop(model: BaseChatModel, system: str, output: type[T], tools: Sequence[BaseTool],
               ex: _Exchange) -> AgentAnswer[T]:
    system = text_system_prompt(system, output, tools)
    while True:
        reply = model.invoke([SystemMessage(system), *ex.messages])
        ex.messages.append(reply)
        text = _text(reply)
        blocks = fenced_blocks(text)
        try:
            requests = tool_requests(blocks)
            if requests and ex.steps >= ex.max_tool_steps:
                raise ReplyError(render("tool_limit", max_tool_steps=ex.max_tool_steps))
            if not requests:
                return ex.answer(parse_answer(text, output, blocks), "text")
        except ReplyError as error:
            ex.repair(str(error), text)
            ex.messages.append(HumanMessage(render("repair", error=str(error), instructions=render("repair_text"))))
            continue
        ex.steps += 1
        results = [ex.run(f"text-{ex.steps}-{i}", r.name, r.args) for i, r in enumerate(requests, 1)]
        shown = "\n\n".join(f"### `{r.name}`{'' if r.ok else ' (failed)'}\n{r.content}" for r in results)
        ex.messages.append(HumanMessage(render("tool_results", results=shown)))


def ask(model: BaseChatModel, *, system: str, prompt: str, output: type[T], tools: Sequence[BaseTool] = (),
        max_tool_steps: int = 8, mode: Mode | str = "auto", history: Sequence[BaseMessage] | None = None,
        max_repairs: int = 2) -> AgentAnswer[T]:
    """Ask ``model`` with ``prompt``, let it call ``tools`` (at most ``max_tool_steps`` rounds), get an ``output``.

    ``mode``: ``native`` tool calling, the ``text`` protocol, or ``auto`` (native where LiteLLM says the model
    supports it, or where a model not served by LiteLLM implements ``bind_tools``; text otherwise).
    """
    if mode not in ("auto", "native", "text"):
        raise ValueError(f"mode must be auto, native or text, not {mode!r}")
    ex = _Exchange(tools, history, prompt, max_tool_steps, max_repairs)
    if mode == "text" or (mode == "auto" and supports_native_tools(model) is False):
        return _text_loop(model, system, output, tools, ex)
    try:
        bound = model.bind_tools([*tools, _final_answer_spec(output)])
    except NotImplementedError:
        if mode == "native":
            raise
        return _text_loop(model, system, output, tools, ex)
    return _native(bound, system, output, ex)


__all__ = ["AgentAnswer", "FINAL_ANSWER", "MalformedReply", "Mode", "ToolCallRecord", "ask", "text_system_prompt"]
