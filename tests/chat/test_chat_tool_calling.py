"""The chat says, in its first lines, which tool protocol its model gets and why (LiteLLM's word or one probe per
process), on the loopback OpenAI-compatible server; the forecaster agent says it too."""

from __future__ import annotations

from typer.testing import CliRunner

from kernelpro.app.forecast import forecaster_by_name
from kernelpro.cli.main import app
from kernelpro.config import Settings
from kernelpro.llm.models import chat_model
from tests.chat.helpers import REFERENCE, chat_settings, session
from tests.support.openai_server import Completion, openai_server_fixture  # noqa: F401
from tests.test_llm import settings_for

READY = Completion(tool_calls=[("report_ready", {"ready": True})])


def test_the_chat_probes_an_unknown_model_once_and_says_what_it_found(settings, tmp_path, openai_server):
    settings = chat_settings(settings, tmp_path)
    settings.llm = settings_for(openai_server)
    openai_server.queue(READY)
    chat = session(settings, chat_model(settings, "chat"))
    assert chat.tool_calling == ("native tool calling (openai/test-model: LiteLLM does not know it; the server "
                                 "answered a probe with a proper tool call)")
    again = session(settings, chat_model(settings, "chat"), thread="t2")  # the same process: no second probe
    assert again.tool_calling == chat.tool_calling and len(openai_server.completions) == 1


def test_a_model_that_answers_the_probe_in_text_is_named_as_one_the_chat_may_not_work_with(settings, tmp_path,
                                                                                              openai_server):
    settings = chat_settings(settings, tmp_path)
    settings.llm = settings_for(openai_server)
    openai_server.queue("I am ready.")
    said = session(settings, chat_model(settings, "chat")).tool_calling
    assert said.startswith("native tool calling, the chat's only way to call tools, though openai/test-model: "
                           "LiteLLM does not know it; the server answered a probe with text")
    assert "--enable-auto-tool-choice" in said
    settings.llm.tool_calling = "text"  # the setting of optimize's agents: the chat says it does not apply
    assert "llm.tool_calling = text applies to optimize's agents only" in \
        session(settings, chat_model(settings, "chat"), thread="t2").tool_calling


def test_kernelpro_chat_prints_the_protocol_in_its_first_lines(tmp_path, monkeypatch, openai_server):
    monkeypatch.chdir(tmp_path)
    for name, value in {"KERNELPRO_LLM__MODEL": "openai/test-model", "KERNELPRO_LLM__API_BASE": openai_server.base_url,
                        "KERNELPRO_LLM__API_KEY": "sk-loopback-secret", "KERNELPRO_LLM__TOOL_CALLING": "auto"}.items():
        monkeypatch.setenv(name, value)
    openai_server.queue(READY)
    result = CliRunner().invoke(app, ["chat", str(REFERENCE), "--device", "cpu", "--thread", "t1", "--chats-dir",
                                      str(tmp_path / "chats")], input="/quit\n")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("chat t1 about scale_relu")
    assert lines[1] == ("the chat calls tools by native tool calling (openai/test-model: LiteLLM does not know it; "
                        "the server answered a probe with a proper tool call)")
    assert len(openai_server.completions) == 1  # the probe only: /quit asked the model nothing


def test_the_forecaster_agent_gets_the_probes_verdict_and_says_it(openai_server):
    settings = Settings(llm=settings_for(openai_server))
    openai_server.queue("I am ready.")
    forecaster = forecaster_by_name(settings, "llm", gpu="NVIDIA H200")
    assert forecaster.mode == "text" and "answered a probe with text" in forecaster.tool_calling
    deferring = forecaster_by_name(settings, "llm_defer", gpu="NVIDIA H200")
    assert deferring.tool_calling == forecaster.tool_calling and len(openai_server.completions) == 1
