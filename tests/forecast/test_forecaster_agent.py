"""The forecaster agent over real HTTP (the loopback OpenAI-compatible server), and `forecast eval` scoring it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kernelpro.agents.forecaster import ForecasterInput, LLMForecaster, forecast_one, system_prompt
from kernelpro.agents.protocol import FINAL_ANSWER
from kernelpro.cli.main import app
from kernelpro.config import Settings
from kernelpro.forecast.dataset import append_rows
from kernelpro.llm.models import chat_model
from tests.forecast.helpers import judged_rows
from tests.support.openai_server import Completion, openai_server_fixture  # noqa: F401
from tests.test_llm import settings_for

VIEW = ForecasterInput(problem_name="relu", problem_source="class Model: ...", candidate_source="class ModelNew: ...",
                       hardware="NVIDIA H200 (sm_90): 132 SMs")


def answer(probs, predicted=4, **extra) -> str:
    return "```json\n" + json.dumps({"probabilities": probs, "predicted_class": predicted, "reasoning": "fused",
                                     **extra}) + "\n```"


def model(server, **overrides):
    return chat_model(Settings(llm=settings_for(server, **overrides)), "forecaster")


def test_a_text_protocol_forecast_is_renormalised_and_the_prompt_holds_what_it_needs(openai_server):
    openai_server.queue(answer([0, 0, 0, 2, 2, 0, 0, 0], predicted=5))
    forecast = forecast_one(model(openai_server), VIEW)
    assert forecast.probabilities[3:5] == [0.5, 0.5] and forecast.raw_sum == 4 and forecast.predicted == 5
    sent = openai_server.completions[0].body["messages"]
    assert "2.83 <= S < 4" in sent[0]["content"] and "`measure`" not in sent[0]["content"]
    assert "NVIDIA H200 (sm_90)" in sent[-1]["content"] and "class ModelNew" in sent[-1]["content"]


def test_native_tool_call_and_the_deferring_variant(openai_server):
    openai_server.queue(Completion(tool_calls=[(FINAL_ANSWER, {"probabilities": [1] * 8, "predicted_class": 3,
                                                               "reasoning": "unsure", "measure": True})]))
    deferred = forecast_one(model(openai_server, tool_calling="native"), VIEW, defer=True, mode="native")
    assert deferred.deferred and not deferred.parse_failure and deferred.raw_sum == 8
    assert "`measure`" in system_prompt(defer=True)


def test_zero_sums_and_unusable_replies_are_parse_failures_not_errors(openai_server):
    openai_server.queue(answer([0] * 8), "no json here", "still none")
    llm = model(openai_server)
    assert forecast_one(llm, VIEW).parse_failure
    failed = forecast_one(llm, VIEW)  # malformed, repaired once, still malformed
    assert failed.parse_failure and failed.probabilities == [0.125] * 8 and len(openai_server.completions) == 3


def test_forecast_eval_scores_a_served_forecaster(openai_server, tmp_path):
    rows = judged_rows(problems=2, per_problem=3)
    append_rows(tmp_path / "judged.jsonl", rows)
    replies = iter([answer([0, 0, 0, 0, 0, 1, 1, 0], predicted=6), answer([0] * 8)] * 3)
    # LiteLLM does not know the served model: one probe first, answered in text, so the text protocol
    openai_server.responder = lambda body: "I am ready." if "tools" in body else next(replies)
    env = {"KERNELPRO_LLM__MODEL": "openai/test-model", "KERNELPRO_LLM__API_BASE": openai_server.base_url,
           "KERNELPRO_LLM__API_KEY": "sk-loopback-secret", "KERNELPRO_LLM__MAX_RETRIES": "0"}
    result = CliRunner().invoke(app, ["forecast", "eval", str(tmp_path / "judged.jsonl"), "--forecaster", "llm",
                                      "--json", "--out", str(tmp_path / "report")], env=env)
    assert result.exit_code == 0, result.output
    assert "the llm forecaster calls tools by the text protocol of fenced blocks (openai/test-model: LiteLLM does " \
        "not know it; the server answered a probe with text" in " ".join(result.stderr.split())
    [scored] = json.loads(result.stdout)["forecasters"]
    assert scored["forecaster"] == "llm" and scored["candidates"] == 6 and scored["failures_left_out"] == 2
    assert scored["parse_failures"] == 2 and scored["all"]["n"] == 4 and scored["parsed"]["n"] == 2
    assert (tmp_path / "report" / "risk_coverage.png").stat().st_size > 1000
    assert "ordinal CRPS" in (tmp_path / "report" / "report.md").read_text()
    assert LLMForecaster(model(openai_server), "x").name == "llm"
