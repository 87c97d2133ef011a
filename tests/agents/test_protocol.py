"""The agent-call protocol with the scripted model: native tool loop, text protocol, repairs, tool failures."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from kernelpro.agents.protocol import FINAL_ANSWER, MalformedReply, ask
from kernelpro.agents.replies import ReplyError, fenced_blocks, loads_lenient, parse_answer, tool_requests
from kernelpro.agents.templates import TemplateError, render, template_names, variables
from kernelpro.tools.registry import ToolContext, tools_by_name
from tests.support.scripted_model import ScriptedChatModel, ScriptExhausted, TextOnlyChatModel, tool_call, tool_calls


class Verdict(BaseModel):
    gpu: str = Field(description="the GPU's name")
    sm_count: int
    notes: list[str] = Field(default_factory=list)


class Kernel(BaseModel):
    summary: str
    code: str


@pytest.fixture
def tools(settings):
    by_name = tools_by_name(ToolContext(settings, device="cpu"))
    return [by_name["gpu_specs"]]


def _broken(reason: str) -> str:
    raise RuntimeError(reason)


BROKEN_TOOL = StructuredTool.from_function(_broken, name="broken", description="Always fails.")


# ---- native tool calling ---------------------------------------------------------------------------------------

def test_native_tool_loop_runs_a_real_tool_and_returns_the_typed_answer(tools):
    model = ScriptedChatModel(script=[
        tool_call("gpu_specs", {"name": "H100"}, id="c1"),
        tool_call(FINAL_ANSWER, {"gpu": "H100", "sm_count": 132}, id="c2"),
    ])
    answer = ask(model, system="You study GPUs.", prompt="How many SMs has an H100?", output=Verdict, tools=tools)

    assert answer.output == Verdict(gpu="H100", sm_count=132) and answer.mode == "native" and answer.repairs == 0
    assert model.bound_tools == [["gpu_specs", FINAL_ANSWER]]
    assert [r.tools for r in model.requests] == [["gpu_specs", FINAL_ANSWER]] * 2
    [record] = answer.tool_calls
    assert record.name == "gpu_specs" and record.ok and "132" in record.content and record.artifact["sm_count"] == 132
    second = model.requests[1].messages
    assert isinstance(second[0], SystemMessage) and second[0].content == "You study GPUs."
    assert isinstance(second[-1], ToolMessage) and second[-1].tool_call_id == "c1" and "132" in second[-1].content
    # the conversation ends with every tool call answered, so it can be continued
    assert isinstance(answer.messages[-1], ToolMessage) and answer.messages[-1].tool_call_id == "c2"


def test_tool_failures_come_back_to_the_model_as_messages(tools):
    model = ScriptedChatModel(script=[
        tool_calls(("gpu_specs", {"name": "NoSuchGPU"}), ("broken", {"reason": "disk on fire"}),
                   ("no_such_tool", {}), ("gpu_specs", {"name": 7, "extra": []}), ids=["a", "b", "c", "d"]),
        tool_call(FINAL_ANSWER, {"gpu": "unknown", "sm_count": 0}),
    ])
    answer = ask(model, system="s", prompt="p", output=Verdict, tools=[*tools, BROKEN_TOOL])

    assert answer.output.gpu == "unknown" and answer.repairs == 0
    by_id = {r.id: r for r in answer.tool_calls}
    assert not any(r.ok for r in answer.tool_calls)
    assert "no specs known for 'NoSuchGPU'" in by_id["a"].content
    assert "broken failed: RuntimeError: disk on fire" in by_id["b"].content
    assert "no tool named 'no_such_tool'" in by_id["c"].content and "gpu_specs" in by_id["c"].content
    assert "invalid arguments" in by_id["d"].content
    seen = {m.tool_call_id: m for m in model.requests[1].messages if isinstance(m, ToolMessage)}
    assert seen.keys() == {"a", "b", "c", "d"} and seen["b"].status == "error"
    assert seen["b"].content == by_id["b"].content


def test_tool_calls_without_ids_still_get_answers(tools):
    model = ScriptedChatModel(script=[
        AIMessage(content="", tool_calls=[{"name": "gpu_specs", "args": {"name": "H100"}, "id": None}]),
        tool_call(FINAL_ANSWER, {"gpu": "H100", "sm_count": 132}),
    ])
    answer = ask(model, system="s", prompt="p", output=Verdict, tools=tools)
    sent_call, sent_result = model.requests[1].messages[-2:]
    assert sent_call.tool_calls[0]["id"] and sent_result.tool_call_id == sent_call.tool_calls[0]["id"]
    assert answer.tool_calls[0].ok


def test_unreadable_tool_arguments_are_repaired(tools):
    broken = AIMessage(content="", invalid_tool_calls=[{"name": "gpu_specs", "args": '{"name": "H1', "id": "x",
                                                        "error": "Unterminated string", "type": "invalid_tool_call"}])
    model = ScriptedChatModel(script=[broken, tool_call(FINAL_ANSWER, {"gpu": "H100", "sm_count": 132})])
    answer = ask(model, system="s", prompt="p", output=Verdict, tools=tools)

    repair = model.requests[1].messages[-1]
    assert isinstance(repair, HumanMessage) and "gpu_specs: the arguments are not valid JSON" in repair.content
    assert "Unterminated string" in repair.content and answer.repairs == 1 and answer.tool_calls == []


def test_tool_steps_are_capped(tools):
    model = ScriptedChatModel(script=[
        tool_call("gpu_specs", {"name": "H100"}),
        tool_call("gpu_specs", {"name": "A100"}, id="over"),
        tool_call(FINAL_ANSWER, {"gpu": "H100", "sm_count": 132}),
    ])
    answer = ask(model, system="s", prompt="p", output=Verdict, tools=tools, max_tool_steps=1)

    assert [r.args for r in answer.tool_calls] == [{"name": "H100"}]
    refused = next(m for m in model.requests[2].messages if isinstance(m, ToolMessage) and m.tool_call_id == "over")
    assert "limit of 1 rounds of tool calls" in refused.content and answer.repairs == 1


def test_an_invalid_final_answer_is_repaired_with_the_validation_error():
    model = ScriptedChatModel(script=[
        tool_call(FINAL_ANSWER, {"gpu": "H100", "sm_count": "many"}, id="bad"),
        tool_call(FINAL_ANSWER, {"gpu": "H100", "sm_count": 132}),
    ])
    answer = ask(model, system="s", prompt="p", output=Verdict)

    assert answer.output.sm_count == 132 and answer.repairs == 1
    repair = model.requests[1].messages[-1]
    assert isinstance(repair, ToolMessage) and repair.tool_call_id == "bad" and repair.status == "error"
    assert "sm_count: Input should be a valid integer" in repair.content


def test_native_accepts_a_json_answer_in_text_and_repairs_prose():
    model = ScriptedChatModel(script=[
        "I think it has a lot of SMs.",
        'Here it is:\n```json\n{"gpu": "H100", "sm_count": 132}\n```',
    ])
    answer = ask(model, system="s", prompt="p", output=Verdict, mode="native")

    assert answer.output.sm_count == 132 and answer.repairs == 1
    repair = model.requests[1].messages[-1]
    assert isinstance(repair, HumanMessage) and "no final_answer call" in repair.content
    assert "no final answer found" in repair.content


def test_repairs_run_out_with_malformed_reply():
    model = ScriptedChatModel(script=[tool_call(FINAL_ANSWER, {"gpu": "H100"})] * 2)
    with pytest.raises(MalformedReply) as raised:
        ask(model, system="s", prompt="p", output=Verdict, max_repairs=1)

    assert "sm_count: Field required" in raised.value.error and model.remaining == 0
    assert isinstance(raised.value.messages[-1], ToolMessage)


def test_history_continues_the_conversation_without_a_second_system_prompt():
    model = ScriptedChatModel(script=[tool_call(FINAL_ANSWER, {"gpu": "H100", "sm_count": 132}),
                                      tool_call(FINAL_ANSWER, {"gpu": "A100", "sm_count": 108})])
    first = ask(model, system="s", prompt="first question", output=Verdict)
    history = [SystemMessage("an old system prompt"), *first.messages]
    second = ask(model, system="s", prompt="second question", output=Verdict, history=history)

    sent = model.requests[1].messages
    assert [type(m).__name__ for m in sent] == ["SystemMessage", "HumanMessage", "AIMessage", "ToolMessage",
                                                "HumanMessage"]
    assert sent[0].content == "s" and sent[-1].content == "second question" and second.output.sm_count == 108


def test_script_running_out_fails_loudly():
    model = ScriptedChatModel(script=["only reply"])
    model.invoke("one")
    with pytest.raises(ScriptExhausted, match="1 replies are used up"):
        model.invoke("two")


# ---- the text protocol -----------------------------------------------------------------------------------------

def test_text_protocol_calls_tools_and_reads_code_from_blocks(tools):
    kernel = 'extern "C" __global__ void k(float* x) { x[0] = 1.0f; }'
    model = TextOnlyChatModel(script=[
        'Let me look.\n```tool\n{"name": "gpu_specs", "args": {"name": "H100"}}\n```',
        f'Done.\n```cuda\n{kernel}\n```\n```json\n{{"summary": "sets x[0]", "code": "@cuda:1",}}\n```',
    ])
    answer = ask(model, system="You write kernels.", prompt="Write one.", output=Kernel, tools=tools)

    assert answer.mode == "text" and answer.output == Kernel(summary="sets x[0]", code=kernel)
    system = model.requests[0].messages[0].content
    assert system.startswith("You write kernels.") and "`gpu_specs`" in system and '"sm_count"' not in system
    assert '"summary"' in system and "```tool" in system and "@python:1" in system
    results = model.requests[1].messages[-1]
    assert isinstance(results, HumanMessage) and "### `gpu_specs`" in results.content and "132" in results.content
    assert answer.tool_calls[0].artifact["sm_count"] == 132


def test_text_protocol_repairs_with_the_parse_error_then_succeeds():
    model = TextOnlyChatModel(script=['```json\n{"gpu": "H100", "sm_count": }\n```',
                                      '```json\n{"gpu": "H100", "sm_count": 132}\n```'])
    answer = ask(model, system="s", prompt="p", output=Verdict)

    assert answer.output.sm_count == 132 and answer.repairs == 1
    repair = model.requests[1].messages[-1].content
    assert "invalid JSON: Expecting value at line 1 column 29" in repair and "```json" in repair


def test_text_protocol_exhausted_repairs_raise_with_the_last_reply():
    model = TextOnlyChatModel(script=["no idea", '{"gpu": "H100"}'])
    with pytest.raises(MalformedReply) as raised:
        ask(model, system="s", prompt="p", output=Verdict, max_repairs=1)
    assert raised.value.last_reply == '{"gpu": "H100"}' and "sm_count: Field required" in raised.value.error


def test_text_protocol_caps_tool_steps(tools):
    call = '```tool\n{"name": "gpu_specs", "args": {}}\n```'
    model = TextOnlyChatModel(script=[call, call, '{"gpu": "H200", "sm_count": 132}'])
    answer = ask(model, system="s", prompt="p", output=Verdict, tools=tools, max_tool_steps=1)
    assert len(answer.tool_calls) == 1 and answer.repairs == 1
    assert "limit of 1 rounds" in model.requests[2].messages[-1].content


def test_native_mode_on_a_model_without_tool_calling_says_so():
    with pytest.raises(NotImplementedError):
        ask(TextOnlyChatModel(script=[]), system="s", prompt="p", output=Verdict, mode="native")
    with pytest.raises(ValueError, match="mode must be"):
        ask(ScriptedChatModel(script=[]), system="s", prompt="p", output=Verdict, mode="json")


# ---- reading replies -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("reply", [
    'Sure! Here is my answer:\n```json\n{"gpu": "H100", "sm_count": 132}\n```\nHope that helps.',
    '```json\n{"gpu": "draft"}\n```\nCorrected:\n```json\n{"gpu": "H100", "sm_count": 132}\n```',
    '```json\n{"gpu": "H100", "sm_count": 132, "notes": ["a", "b",],}\n```',
    "```json\n{'gpu': 'H100', 'sm_count': 132, 'notes': []}\n```",
    'The answer is {"gpu": "H100", "sm_count": 132} as measured.',
    'Answer:\n```json\n{"gpu": "H100",\n "sm_count": 132}',
    "```\n{\"gpu\": \"H100\", \"sm_count\": 132, \"notes\": null}\n```".replace("null", "[]"),
    '```json\n{"gpu": "H100", "sm_count": 132, "notes": ["uses {braces} and \'quotes\'"]}\n```',
])
def test_answers_are_read_robustly(reply):
    answer = parse_answer(reply, Verdict)
    assert (answer.gpu, answer.sm_count) == ("H100", 132)


def test_python_literals_and_code_references():
    assert loads_lenient("{'a': True, 'b': None, 'c': -1.5, 'd': [1, 2,],}") == {"a": True, "b": None, "c": -1.5,
                                                                                 "d": [1, 2]}
    reply = ('```python\nprint("first")\n```\n```py\nprint("second")\n```\n'
             '```json\n{"summary": "two", "code": "@python:2"}\n```')
    assert parse_answer(reply, Kernel).code == 'print("second")'
    with pytest.raises(ReplyError, match="refers to ```cuda block number 1, but the reply has 0"):
        parse_answer('```json\n{"summary": "x", "code": "@cuda:1"}\n```', Kernel)


def test_tool_blocks_and_their_errors():
    blocks = fenced_blocks('```tool\n{"name": "a", "args": {"src": "@cuda:1"}}\n```\n````cuda\nint x;\n````\n'
                           "```tool_call\n{'name': 'b'}\n```")
    assert [(b.lang, b.closed) for b in blocks] == [("tool", True), ("cuda", True), ("tool_call", True)]
    assert [(r.name, r.args) for r in tool_requests(blocks)] == [("a", {"src": "int x;"}), ("b", {})]
    with pytest.raises(ReplyError, match="must hold one JSON object"):
        tool_requests(fenced_blocks('```tool\n["gpu_specs"]\n```'))
    with pytest.raises(ReplyError, match="could not be read: invalid JSON"):
        tool_requests(fenced_blocks('```tool\n{"name": "a", "args": \n```'))


def test_unreadable_answers_say_why():
    with pytest.raises(ReplyError, match="no final answer found"):
        parse_answer("I could not decide.", Verdict)
    with pytest.raises(ReplyError, match="must be a JSON object, not list"):
        parse_answer("```json\n[1, 2]\n```", Verdict)


# ---- templates -------------------------------------------------------------------------------------------------

def test_every_template_renders_with_all_its_variables():
    for name in template_names():
        values = {key: f"<{key}>" for key in variables(name)}
        text = render(name, **values)
        assert text.strip() and all(value in text for value in values.values()), name
        assert "$" not in text.replace("$$", ""), name


def test_a_missing_template_variable_fails_loudly():
    with pytest.raises(TemplateError, match="needs values for: error, instructions"):
        render("repair")
    with pytest.raises(TemplateError, match="no prompt template 'nonexistent'"):
        render("nonexistent")
    assert render("repair.md", error="E", instructions="I", unused=1).startswith("Your last reply could not be used: E")


def test_final_answer_tool_carries_the_output_schema():
    model = ScriptedChatModel(script=[tool_call(FINAL_ANSWER, {"gpu": "x", "sm_count": 1})])
    ask(model, system="s", prompt="p", output=Verdict)
    [spec] = model.requests[0].tool_specs
    assert spec["function"]["parameters"] == Verdict.model_json_schema()
    assert "final answer" in spec["function"]["description"]
