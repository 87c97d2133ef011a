"""Which way the agents call tools with the configured models, when ``llm.tool_calling`` is ``auto``.

LiteLLM knows which of the models it maps call tools natively. It does not know the names an OpenAI-compatible
server serves (``openai/<served-name>`` on vLLM, SGLang, llama.cpp...), though many of those call tools well.
For such a model one tiny request with one tool decides: a proper tool call back means native tool calling, and
anything else (text, an error such as vLLM's refusal without ``--enable-auto-tool-choice``) the text protocol.
A process probes each model (and server) once: the agents, the forecaster and the chat share the verdict. The
chat has no text protocol, so ``for_chat`` only says what native tool calling means for its model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from kernelpro.llm.keys import LLMKeyMissing

PROBE_TOOL = {"type": "function", "function": {
    "name": "report_ready", "description": "Report that you are ready.",
    "parameters": {"type": "object", "properties": {"ready": {"type": "boolean"}}, "required": ["ready"]}}}
PROBE_PROMPT = "Call the tool report_ready with ready=true. Answer with the tool call only, no text."


@dataclass(frozen=True)
class ToolCalling:
    """The mode every agent uses (``native``, ``text``, or ``auto``: LiteLLM's word per model) and why, in a line."""

    mode: str
    why: str


def litellm_knows(name: str) -> bool:
    """Whether LiteLLM's model map has ``name`` (so its word on tool calling means something)."""
    import litellm

    try:
        litellm.get_model_info(model=name)
    except Exception:  # noqa: BLE001 - LiteLLM raises for a model it does not map
        return False
    return True


def probe(model: BaseChatModel) -> tuple[bool, str]:
    """One tiny request with one tool: whether the reply is a proper call of it, and what came back instead."""
    try:
        reply = model.bind_tools([PROBE_TOOL]).invoke([HumanMessage(PROBE_PROMPT)])
    except LLMKeyMissing:
        raise  # the run cannot go on either way; say so now
    except Exception as error:  # noqa: BLE001 - a server that refuses tools answers with an error
        return False, f"the server refused a request with a tool ({type(error).__name__}: {str(error)[:200]})"
    calls = list(getattr(reply, "tool_calls", None) or [])
    if any(c.get("name") == "report_ready" for c in calls):
        return True, "the server answered a probe with a proper tool call"
    return False, "the server answered a probe with text, not a tool call"


_PROBED: dict[tuple[str, str], tuple[bool, str]] = {}
"""Probe verdicts by (model, api_base): a process probes a model once, however many places start it."""


def verdicts(models: Mapping[str, BaseChatModel]) -> dict[str, tuple[bool, str]]:
    """Per distinct model name: whether it calls tools natively and why (LiteLLM's word, or a probe's answer)."""
    from kernelpro.llm.models import supports_native_tools

    found: dict[str, tuple[bool, str]] = {}
    for model in models.values():
        name = str(getattr(model, "model", "") or getattr(model, "model_name", ""))
        if name in found:
            continue
        native = supports_native_tools(model)
        if native is None:  # not a LiteLLM model: ask() decides by whether it binds tools
            found[name] = (True, "not served through LiteLLM")
        elif litellm_knows(name):
            found[name] = (native, "LiteLLM says it " + ("calls tools natively" if native else
                                                          "has no native tool calling"))
        else:
            key = (name, str(getattr(model, "api_base", "") or ""))
            if key not in _PROBED:
                native, seen = probe(model)
                _PROBED[key] = (native, f"LiteLLM does not know it; {seen}")
            found[name] = _PROBED[key]
    return found


def resolve(mode: str, models: Mapping[str, BaseChatModel]) -> ToolCalling:
    """The tool-calling mode for ``models`` (role -> model): the setting when it is not ``auto``; else LiteLLM's
    word for the models it knows and a probe (``probe``, once per model and process) for those it does not."""
    if mode != "auto":
        return ToolCalling(mode, f"{'native tool calling' if mode == 'native' else 'the text protocol'} "
                                 f"(llm.tool_calling = {mode})")
    found = verdicts(models)
    said = "; ".join(f"{name}: {why}" for name, (_, why) in found.items())
    natives = {native for native, _ in found.values()}
    if natives == {True}:
        return ToolCalling("native", f"native tool calling ({said})")
    if natives == {False}:
        return ToolCalling("text", f"the text protocol of fenced blocks ({said}); set llm.tool_calling = native to "
                                   "force the provider's tool calling")
    return ToolCalling("auto", f"per model ({said})")


def for_chat(mode: str, model: BaseChatModel) -> ToolCalling:
    """What the chat's agent does: it calls tools natively whatever the setting (it has no text protocol), so
    this says why that works for ``model``, or why its replies may come without tool calls."""
    if mode == "native":
        return ToolCalling("native", "native tool calling (llm.tool_calling = native)")
    if mode == "text":
        return ToolCalling("native", "native tool calling: the chat has no text protocol, so llm.tool_calling = "
                                     "text applies to optimize's agents only")
    ((name, (native, why)),) = verdicts({"chat": model}).items()
    if native:
        return ToolCalling("native", f"native tool calling ({name}: {why})")
    return ToolCalling("native", f"native tool calling, the chat's only way to call tools, though {name}: {why}; "
                                 "expect answers without tool calls (serve it with tool calling on, e.g. vLLM's "
                                 "--enable-auto-tool-choice, or choose another model)")


__all__ = ["PROBE_TOOL", "ToolCalling", "for_chat", "litellm_knows", "probe", "resolve", "verdicts"]
