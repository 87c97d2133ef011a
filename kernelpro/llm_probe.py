"""Which way the agents call tools with the configured models, when ``llm.tool_calling`` is ``auto``.

LiteLLM knows which of the models it maps call tools natively. It does not know the names an OpenAI-compatible
server serves (``openai/<served-name>`` on vLLM, SGLang, llama.cpp...), though many of those call tools well.
For such a model one tiny request with one tool decides: a proper tool call back means native tool calling, and
anything else (text, an error such as vLLM's refusal without ``--enable-auto-tool-choice``) the text protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from kernelpro.llm_keys import LLMKeyMissing

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


def resolve(mode: str, models: Mapping[str, BaseChatModel]) -> ToolCalling:
    """The tool-calling mode for ``models`` (role -> model): the setting when it is not ``auto``; else LiteLLM's
    word for the models it knows and a probe (``probe``) for those it does not, each distinct model once."""
    if mode != "auto":
        return ToolCalling(mode, f"{'native tool calling' if mode == 'native' else 'the text protocol'} "
                                 f"(llm.tool_calling = {mode})")
    from kernelpro.llm import supports_native_tools

    verdicts: dict[str, tuple[bool, str]] = {}
    for model in models.values():
        name = str(getattr(model, "model", "") or getattr(model, "model_name", ""))
        if name in verdicts:
            continue
        native = supports_native_tools(model)
        if native is None:  # not a LiteLLM model: ask() decides by whether it binds tools
            verdicts[name] = (True, "not served through LiteLLM")
        elif litellm_knows(name):
            verdicts[name] = (native, "LiteLLM says it " + ("calls tools natively" if native else
                                                             "has no native tool calling"))
        else:
            native, seen = probe(model)
            verdicts[name] = (native, f"LiteLLM does not know it; {seen}")
    said = "; ".join(f"{name}: {why}" for name, (_, why) in verdicts.items())
    natives = {native for native, _ in verdicts.values()}
    if natives == {True}:
        return ToolCalling("native", f"native tool calling ({said})")
    if natives == {False}:
        return ToolCalling("text", f"the text protocol of fenced blocks ({said}); set llm.tool_calling = native to "
                                   "force the provider's tool calling")
    return ToolCalling("auto", f"per model ({said})")


__all__ = ["PROBE_TOOL", "ToolCalling", "litellm_knows", "probe", "resolve"]
