"""A refused or missing API key fails at once with the fix, against the loopback server; never retried."""

from __future__ import annotations

import pytest

from kernelpro.llm import LLMKeyMissing, chat_model
from tests.support.openai_server import HttpError, openai_server_fixture  # noqa: F401
from tests.test_llm import settings_for


def test_a_refused_key_is_not_retried_and_says_which_setting_fixes_it(openai_server):
    model = chat_model(settings_for(openai_server, max_retries=4), "coder")
    openai_server.queue(*[HttpError(401, "Incorrect API key provided")] * 5)
    with pytest.raises(LLMKeyMissing) as raised:
        model.invoke("x")
    assert len(openai_server.completions) == 1  # once, not five times
    message = str(raised.value)
    assert "Incorrect API key provided" in message and "KERNELPRO_LLM__API_KEY or OPENAI_API_KEY" in message
    assert "Nothing was retried" in message


def test_a_missing_key_which_litellm_calls_an_internal_error_fails_at_once(openai_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = chat_model(settings_for(openai_server, api_key=None, max_retries=4), "coder")
    calls = []
    client = model.client
    original = client.completion

    def counted(**kwargs):
        calls.append(kwargs)
        return original(**kwargs)

    monkeypatch.setattr(client, "completion", counted)
    with pytest.raises(LLMKeyMissing) as raised:
        model.invoke("x")
    assert len(calls) == 1  # the client refused before sending; no retry either
    assert f"a server at {openai_server.base_url} that checks no key still needs one" in str(raised.value)


def test_async_calls_fail_at_once_too(openai_server):
    import asyncio

    model = chat_model(settings_for(openai_server, max_retries=4), "coder")
    openai_server.queue(*[HttpError(401, "bad key")] * 5)
    with pytest.raises(LLMKeyMissing):
        asyncio.run(model.ainvoke("x"))
    assert len(openai_server.completions) == 1
