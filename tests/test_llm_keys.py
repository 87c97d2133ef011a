"""A refused or missing API key fails at once with the fix, against the loopback server; never retried."""

from __future__ import annotations

import pytest

from kernelpro.exit_codes import SETUP_FAILED
from kernelpro.llm.models import LLMKeyMissing, chat_model
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


def test_optimize_with_a_refused_key_stops_at_the_start_with_the_fix(openai_server, tmp_path, monkeypatch):
    """The tool-calling probe is the run's first call: a refused key ends the set-up there, once, with the fix."""
    import os

    from typer.testing import CliRunner

    from kernelpro.cli import app
    from tests.conftest import DATA

    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("KERNELPRO_")]:
        monkeypatch.delenv(key)
    openai_server.queue(*[HttpError(401, "Incorrect API key provided")] * 5)
    env = {"KERNELPRO_LLM__MODEL": "openai/test-model", "KERNELPRO_LLM__API_BASE": openai_server.base_url,
           "KERNELPRO_LLM__API_KEY": "sk-wrong", "KERNELPRO_LLM__RETRY_BACKOFF_S": "0.01"}
    result = CliRunner().invoke(app, ["optimize", str(DATA / "problems" / "scale_relu.py"), "--device", "cpu",
                                      "--runs-dir", str(tmp_path / "runs"), "--no-memory"], env=env)
    assert result.exit_code == SETUP_FAILED, result.output  # a suite stops there: every problem would fail alike
    assert "KERNELPRO_LLM__API_KEY" in " ".join(result.output.split()) and len(openai_server.completions) == 1
