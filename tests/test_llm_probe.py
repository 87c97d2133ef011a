"""`llm.tool_calling = auto` for a model LiteLLM does not know: one probe request decides, on the loopback server."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from kernelpro.agents.protocol import ask
from kernelpro.llm.models import LLMKeyMissing, chat_model
from kernelpro.llm.probe import resolve
from tests.support.openai_server import Completion, HttpError, openai_server_fixture  # noqa: F401
from tests.test_llm import settings_for


class Ready(BaseModel):
    ready: bool


def models(server, **overrides):
    settings = settings_for(server, **overrides)
    return {role: chat_model(settings, role) for role in ("planner", "coder")}


def test_a_server_that_answers_the_probe_with_a_tool_call_gets_native_tool_calling(openai_server):
    openai_server.queue(Completion(tool_calls=[("report_ready", {"ready": True})]))
    calling = resolve("auto", models(openai_server))
    assert calling.mode == "native" and "LiteLLM does not know it" in calling.why
    assert "proper tool call" in calling.why
    (probe,) = openai_server.completions  # one request for both roles: the same model
    assert probe.body["tools"][0]["function"]["name"] == "report_ready"
    openai_server.queue(Completion(tool_calls=[("final_answer", {"ready": True})]))
    answer = ask(models(openai_server)["coder"], system="s", prompt="p", output=Ready, mode=calling.mode)
    assert answer.mode == "native" and answer.output.ready
    assert "tools" in openai_server.completions[-1].body  # the agents' own calls carry the tools natively


def test_a_server_that_answers_in_text_gets_the_text_protocol(openai_server):
    openai_server.queue("I am ready.")
    calling = resolve("auto", models(openai_server))
    assert calling.mode == "text" and "answered a probe with text" in calling.why
    assert "llm.tool_calling = native" in calling.why  # and how to force it
    openai_server.queue('```json\n{"ready": true}\n```')
    answer = ask(models(openai_server)["coder"], system="s", prompt="p", output=Ready, mode=calling.mode)
    assert answer.mode == "text" and "tools" not in openai_server.completions[-1].body


def test_a_server_that_refuses_tools_gets_the_text_protocol(openai_server):
    openai_server.queue(HttpError(400, '"auto" tool choice requires --enable-auto-tool-choice'))
    calling = resolve("auto", models(openai_server, max_retries=0))
    assert calling.mode == "text" and "refused a request with a tool" in calling.why


def test_a_refused_key_at_the_probe_fails_the_setup(openai_server):
    openai_server.queue(HttpError(401, "bad key"))
    with pytest.raises(LLMKeyMissing):
        resolve("auto", models(openai_server))


def test_known_models_and_a_set_mode_send_no_probe(openai_server):
    known = {"coder": chat_model(settings_for(openai_server, model="openai/gpt-4o"), "coder")}
    assert resolve("auto", known).mode == "native" and resolve("text", models(openai_server)).mode == "text"
    assert not openai_server.completions
