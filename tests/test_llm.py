"""The LLM layer against a real loopback OpenAI-compatible server through LiteLLM: calls, streams, tools,
retries, usage, cost and the budget; and no network at import."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest
from pydantic import BaseModel

from kernelpro.agents.protocol import FINAL_ANSWER, ask
from kernelpro.config import LLMSettings, Settings
from kernelpro.llm.models import (
    BudgetExceeded,
    LLMNotConfigured,
    UsageMeter,
    chat_model,
    llm_configured,
    supports_native_tools,
    why_no_llm,
)
from kernelpro.tools.registry import ToolContext, tools_by_name
from tests.support.openai_server import Completion, HttpError, OpenAIServer, openai_server_fixture  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
PRICES = {"openai/test-model": {"input_per_mtok": 2.0, "output_per_mtok": 10.0}}


class Verdict(BaseModel):
    gpu: str
    sm_count: int


def settings_for(server: OpenAIServer, **overrides) -> LLMSettings:
    values = {"model": "openai/test-model", "api_base": server.base_url, "api_key": "sk-loopback-secret",
              "retry_backoff_s": 0.01, "max_retries": 2} | overrides
    return LLMSettings(**values)


def test_without_a_model_there_is_no_llm_and_the_reason_says_how_to_configure():
    settings = Settings(llm=LLMSettings(coder="openai/gpt-5"))
    assert not llm_configured(settings)
    reason = why_no_llm(settings)
    assert "built-in recipes" in reason and "KERNELPRO_LLM__MODEL=anthropic/claude-sonnet-4-5" in reason
    assert "KERNELPRO_LLM__API_BASE=http://localhost:8000/v1" in reason and "ollama/" in reason
    assert "Models are set for coder" in reason
    with pytest.raises(LLMNotConfigured, match="KERNELPRO_LLM__MODEL"):
        chat_model(settings, "planner")
    assert llm_configured(LLMSettings(model="ollama/qwen2.5-coder"))
    assert why_no_llm(LLMSettings(model="ollama/qwen2.5-coder")) is None


def test_each_role_gets_its_model_and_the_key_is_never_shown(monkeypatch):
    monkeypatch.setenv("KERNELPRO_LLM__MODEL", "openai/default-model")
    monkeypatch.setenv("KERNELPRO_LLM__CODER", "openai/coder-model")
    monkeypatch.setenv("KERNELPRO_LLM__API_KEY", "sk-very-secret")
    settings = Settings()
    coder, planner = chat_model(settings, "coder"), chat_model(settings, "planner")
    assert (coder.model, planner.model) == ("openai/coder-model", "openai/default-model")
    assert coder.metadata["kernelpro_role"] == "coder"
    for shown in (repr(settings), str(settings), repr(coder), str(coder), settings.model_dump_json()):
        assert "sk-very-secret" not in shown


def test_a_real_http_round_trip(openai_server):
    openai_server.queue("Hello from the server.")
    model = chat_model(settings_for(openai_server, temperature=0.2, model="openai/test-model"), "critic")
    reply = model.invoke("Say hello.")

    assert reply.content == "Hello from the server."
    [request] = openai_server.completions
    assert request.body["model"] == "test-model" and request.body["temperature"] == 0.2
    assert request.body["messages"] == [{"role": "user", "content": "Say hello."}]
    assert request.headers["authorization"] == "Bearer sk-loopback-secret"
    with urllib.request.urlopen(f"{openai_server.base_url}/models") as listing:
        assert [m["id"] for m in json.load(listing)["data"]] == ["test-model"]


def test_streaming_with_tool_calls_and_usage(openai_server):
    openai_server.queue(Completion("Checking the specs.", tool_calls=[("gpu_specs", {"name": "H100"})],
                                   prompt_tokens=40, completion_tokens=12))
    meter = UsageMeter(settings_for(openai_server, prices=PRICES))
    model = chat_model(settings_for(openai_server, prices=PRICES), "planner", meter=meter)
    chunks = list(model.stream("Which GPU?"))
    message = chunks[0]
    for chunk in chunks[1:]:
        message += chunk

    assert openai_server.completions[0].body["stream"] is True and len(chunks) > 3
    assert message.content == "Checking the specs."
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [("gpu_specs", {"name": "H100"})]
    assert message.usage_metadata["input_tokens"] == 40 and message.usage_metadata["output_tokens"] == 12


def test_native_ask_over_http_runs_the_tool_and_sends_the_schema(openai_server, settings):
    tools = [tools_by_name(ToolContext(settings, device="cpu"))["gpu_specs"]]
    openai_server.queue(Completion(tool_calls=[("gpu_specs", {"name": "H100"})]),
                        Completion(tool_calls=[(FINAL_ANSWER, {"gpu": "H100", "sm_count": 132})]))
    model = chat_model(settings_for(openai_server, tool_calling="native"), "planner")
    answer = ask(model, system="You study GPUs.", prompt="SMs of an H100?", output=Verdict, tools=tools,
                 mode="native")

    assert answer.output == Verdict(gpu="H100", sm_count=132) and answer.mode == "native"
    first, second = (r.body for r in openai_server.completions)
    sent = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert sent.keys() == {"gpu_specs", FINAL_ANSWER}
    assert sent[FINAL_ANSWER]["parameters"]["required"] == ["gpu", "sm_count"]
    assert first["messages"][0] == {"role": "system", "content": "You study GPUs."}
    tool_reply = second["messages"][-1]
    assert tool_reply["role"] == "tool" and "132" in tool_reply["content"]
    assert tool_reply["tool_call_id"] == second["messages"][-2]["tool_calls"][0]["id"]


def test_auto_mode_picks_text_for_a_model_litellm_does_not_know(openai_server):
    openai_server.queue('```json\n{"gpu": "H200", "sm_count": 132}\n```')
    model = chat_model(settings_for(openai_server), "forecaster")
    answer = ask(model, system="s", prompt="p", output=Verdict)

    assert supports_native_tools(model) is False and answer.mode == "text"
    assert "tools" not in openai_server.completions[0].body
    assert supports_native_tools(chat_model(LLMSettings(model="openai/gpt-4o"), "coder")) is True


def test_usage_and_cost_per_role_with_local_prices(openai_server):
    settings = settings_for(openai_server, prices=PRICES)
    meter = UsageMeter(settings)
    openai_server.queue(Completion("a", prompt_tokens=1000, completion_tokens=100),
                        Completion("b", prompt_tokens=500, completion_tokens=50),
                        Completion("c", prompt_tokens=10, completion_tokens=1))
    chat_model(settings, "planner", meter=meter).invoke("x")
    chat_model(settings, "planner", meter=meter).invoke("y")
    chat_model(settings, "coder", meter=meter).invoke("z")

    planner = meter.by_role["planner"]
    assert (planner.calls, planner.prompt_tokens, planner.completion_tokens) == (2, 1500, 150)
    assert planner.cost_usd == pytest.approx((1500 * 2.0 + 150 * 10.0) / 1e6) and planner.priced
    assert meter.total.calls == 3 and meter.spent_usd == pytest.approx(0.0045 + (10 * 2.0 + 10.0) / 1e6)

    restored = UsageMeter.from_dict(json.loads(json.dumps(meter.to_dict())), settings)
    assert restored.to_dict() == meter.to_dict()


def test_unpriced_models_cost_nothing_but_say_so_and_litellm_prices_known_ones(openai_server):
    openai_server.queue(Completion("a", prompt_tokens=1000, completion_tokens=1000),
                        Completion("b", prompt_tokens=1000, completion_tokens=1000))
    meter = UsageMeter()
    chat_model(settings_for(openai_server), "critic", meter=meter).invoke("x")
    chat_model(settings_for(openai_server, model="openai/gpt-4o"), "planner", meter=meter).invoke("y")

    critic, planner = meter.by_role["critic"], meter.by_role["planner"]
    assert (critic.cost_usd, critic.priced, critic.prompt_tokens) == (0.0, False, 1000)
    assert planner.priced and planner.cost_usd > 0
    assert meter.to_dict()["total"]["priced"] is False


def test_the_budget_stops_the_run_and_survives_a_resume(openai_server):
    settings = settings_for(openai_server, prices=PRICES, budget_usd=0.01)
    meter = UsageMeter(settings)
    model = chat_model(settings, "coder", meter=meter)
    openai_server.queue(Completion("cheap", prompt_tokens=1000, completion_tokens=100),
                        Completion("dear", prompt_tokens=1000, completion_tokens=1000))
    model.invoke("one")
    with pytest.raises(BudgetExceeded) as raised:
        model.invoke("two")
    assert raised.value.spent_usd == pytest.approx(0.003 + 0.012) and raised.value.budget_usd == 0.01

    with pytest.raises(BudgetExceeded):
        model.invoke("three")
    resumed = UsageMeter.from_dict(meter.to_dict(), settings)
    with pytest.raises(BudgetExceeded):
        chat_model(settings, "coder", meter=resumed).invoke("four")
    assert len(openai_server.completions) == 2  # nothing was sent once the budget was spent


def test_transient_failures_are_retried_and_others_are_not(openai_server):
    model = chat_model(settings_for(openai_server, max_retries=2), "coder")
    openai_server.queue(HttpError(500), HttpError(429), "third time lucky")
    assert model.invoke("x").content == "third time lucky" and len(openai_server.completions) == 3

    openai_server.queue(HttpError(503), HttpError(502), HttpError(500))
    with pytest.raises(Exception) as raised:
        model.invoke("y")
    assert getattr(raised.value, "status_code", None) == 500 and len(openai_server.completions) == 6

    openai_server.queue(HttpError(400, "bad request"))  # a retry would meet the fallback 500
    with pytest.raises(Exception) as raised:
        model.invoke("z")
    assert getattr(raised.value, "status_code", None) == 400 and len(openai_server.completions) == 7


def test_async_calls_retry_and_are_metered_too(openai_server):
    settings = settings_for(openai_server, prices=PRICES)
    meter = UsageMeter(settings)
    openai_server.queue(HttpError(429), Completion("async reply", prompt_tokens=100, completion_tokens=10))
    reply = asyncio.run(chat_model(settings, "forecaster", meter=meter).ainvoke("x"))
    assert reply.content == "async reply" and len(openai_server.completions) == 2
    assert meter.by_role["forecaster"].cost_usd == pytest.approx((100 * 2.0 + 10 * 10.0) / 1e6)


NO_NETWORK = textwrap.dedent("""
    import json, socket, sys, urllib.request
    attempts = []
    def refuse(*args, **kwargs):
        attempts.append(repr(args)[:200])
        raise OSError("network access refused by the test")
    socket.socket.connect = socket.socket.connect_ex = refuse
    socket.create_connection = socket.getaddrinfo = refuse

    import kernelpro.llm.models
    imported_litellm = "litellm" in sys.modules
    from kernelpro.config import LLMSettings
    model = kernelpro.llm.models.chat_model(LLMSettings(model="anthropic/claude-sonnet-4-5"), "planner")
    built = "litellm" in sys.modules and type(model).__name__
    before_probe = list(attempts)
    try:
        urllib.request.urlopen("http://127.0.0.1:9/", timeout=1)
    except OSError:
        pass
    print(json.dumps({"imported_litellm": imported_litellm, "built": built, "attempts": before_probe,
                      "probe_caught": len(attempts) > len(before_probe)}))
""")


def test_importing_and_building_a_model_opens_no_socket():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LITELLM", "KERNELPRO"))}
    done = subprocess.run([sys.executable, "-c", NO_NETWORK], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"imported_litellm": False, "built": "RetryingChatLiteLLM", "attempts": [],
                      "probe_caught": True}
