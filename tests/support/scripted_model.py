"""The one stand-in for an LLM in tests: a chat model that replies from a script and records every request.

A script entry is an ``AIMessage`` (tool calls included), a string (the reply's text), or a callable that takes
the request's messages and returns either. Running past the end of the script fails the test loudly.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

Step = Union[AIMessage, str, Callable[[list[BaseMessage]], Union[AIMessage, str]]]
_ids = itertools.count(1)


class ScriptExhausted(AssertionError):
    """The code under test called the model more often than the script foresaw."""


@dataclass
class ScriptedRequest:
    """One call the model received: its messages, the tools bound for it (names and OpenAI specs), other arguments."""

    messages: list[BaseMessage]
    tools: list[str] = field(default_factory=list)
    tool_specs: list[dict[str, Any]] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n\n".join(message.text for message in self.messages)


def tool_call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None,
              content: str = "") -> AIMessage:
    """A scripted reply calling one tool."""
    return tool_calls((name, args or {}), ids=[id] if id else None, content=content)


def tool_calls(*calls: tuple[str, dict[str, Any]], ids: Sequence[str] | None = None, content: str = "") -> AIMessage:
    """A scripted reply calling several tools at once."""
    ids = list(ids or [f"call-{next(_ids)}" for _ in calls])
    return AIMessage(content=content, tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}
                                                  for (name, args), call_id in zip(calls, ids, strict=True)])


class ScriptedChatModel(BaseChatModel):
    """Replies from ``script`` in order; ``requests`` holds every call received, ``bound_tools`` every binding."""

    script: list[Any]
    model_name: str = "scripted"
    usage: dict[str, int] | None = None
    """Token counts put on every reply (``input_tokens``, ``output_tokens``), for tests of usage metering."""

    _position: int = PrivateAttr(default=0)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)  # parallel branches (Send) call it from threads
    _requests: list[ScriptedRequest] = PrivateAttr(default_factory=list)
    _bound_tools: list[list[str]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def requests(self) -> list[ScriptedRequest]:
        return self._requests

    @property
    def bound_tools(self) -> list[list[str]]:
        return self._bound_tools

    @property
    def remaining(self) -> int:
        return len(self.script) - self._position

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        specs = [convert_to_openai_tool(tool) for tool in tools]
        self._bound_tools.append([spec["function"]["name"] for spec in specs])
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=specs, **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        specs = kwargs.pop("tools", [])
        with self._lock:  # each call takes its own reply, however the threads interleave
            self._requests.append(ScriptedRequest(list(messages), [s["function"]["name"] for s in specs], specs,
                                                  kwargs))
            if self._position >= len(self.script):
                last = messages[-1].text[-500:] if messages else ""
                raise ScriptExhausted(f"the script's {len(self.script)} replies are used up; call "
                                      f"{len(self._requests)} ended with: {last!r}")
            step = self.script[self._position]
            self._position += 1
        reply = step(list(messages)) if callable(step) else step
        message = AIMessage(content=reply) if isinstance(reply, str) else reply.model_copy(deep=True)
        message.response_metadata = {**message.response_metadata, "model_name": self.model_name}
        if self.usage is not None:
            message.usage_metadata = {"input_tokens": self.usage.get("input_tokens", 0),
                                      "output_tokens": self.usage.get("output_tokens", 0),
                                      "total_tokens": sum(self.usage.values())}
        return ChatResult(generations=[ChatGeneration(message=message)])


class TextOnlyChatModel(ScriptedChatModel):
    """A scripted model that, like many local models, cannot call tools natively."""

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None,
                   **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        raise NotImplementedError("this model has no native tool calling")


__all__ = ["ScriptExhausted", "ScriptedChatModel", "ScriptedRequest", "TextOnlyChatModel", "tool_call",
           "tool_calls"]
