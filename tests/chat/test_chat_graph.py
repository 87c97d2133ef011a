"""The chat graph with a scripted tool-calling model, the real CPU judge and real tools and files."""

from __future__ import annotations

import sqlite3

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from kernelpro.chat.graph import STOPPED, Cancelled, builder
from kernelpro.chat.session import ChatBudgets
from tests.chat.helpers import REFERENCE, chat_settings, session
from tests.conftest import DATA
from tests.graphs.helpers import HONEST, WRONG
from tests.support.scripted_model import ScriptedChatModel, TextOnlyChatModel, tool_call, tool_calls
from tests.tools.test_registry import GOOD_KERNEL

PLANTED = DATA / "ncu" / "planted"
# Tools whose backends take tens of seconds to open on a cold machine (the memory's embedding model, the CUTLASS
# index, the CPU profiler) get arguments their schemas refuse: the face answers without opening them. Their
# backends are tested in tests/tools and tests/memory; the profiler runs in the chat's H200 transcript.
REFUSED = {"memory_write": {"tags": "not-a-list"}, "memory_search": {"query": ["not", "text"]},
           "profile": {"full": "sometimes"}, "cutlass_search": {"regex": "perhaps"},
           "cutlass_definition": {"symbol": ["a", "b"]}, "cutlass_usages": {}, "cutlass_examples": {"topic": 7},
           "cutlass_read": {"start": 0}, "cutlass_list": {"path": 3}, "ncu_sections": {"report": 5},
           "ncu_rules": {"report": ["a"]}, "report_details": {}}
EVERY_TOOL = [
    ("compile_check", {"source": GOOD_KERNEL}),
    ("resource_report", {"source": GOOD_KERNEL, "gpu": "H200"}),
    ("static_report", {"source": GOOD_KERNEL}),
    ("judge_candidate", {"source": HONEST}),
    ("judge_candidate", {"source": WRONG, "timing": False}),
    ("gpu_specs", {"name": "H200"}),
    ("diagnose", {"ncu_csv": str(PLANTED / "memory_bound.csv")}),
    ("read_metrics", {"metrics": ["dram__throughput"], "profile": str(PLANTED / "memory_bound.csv")}),
    ("write_candidate", {"name": "fused", "source": HONEST}),
    *REFUSED.items(),
]


def ask(graph, text: str, thread: str, chat) -> dict:
    config = {"configurable": {"thread_id": thread}}
    graph.invoke({"messages": [HumanMessage(text)]}, config, context=chat)
    return graph.get_state(config).values


def test_every_tool_is_reachable_through_the_tool_node(settings, tmp_path):
    model = ScriptedChatModel(script=[tool_calls(*EVERY_TOOL), "All twenty answered."])
    chat = session(chat_settings(settings, tmp_path), model)
    state = ask(builder().compile(checkpointer=InMemorySaver()), "try every tool", "t1", chat)

    assert set(model.bound_tools[0]) == {name for name, _ in EVERY_TOOL}
    replies = {m.name: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert set(replies) == {name for name, _ in EVERY_TOOL}
    judged = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "judge_candidate"]
    assert judged[0].content.startswith("ok") and judged[1].content.startswith("incorrect")
    assert judged[1].artifact["speedup"] is None  # correctness only
    assert not any("there is no tool" in m.content for m in replies.values())
    for name in REFUSED:
        assert "invalid arguments" in replies[name].content, replies[name].content
    assert "registers" in replies["compile_check"].content
    assert "132 SMs" in replies["gpu_specs"].content
    assert replies["diagnose"].artifact["kernels"][0]["findings"][0]["id"] == "memory_bound"
    assert replies["static_report"].status == "error" and "no GPU here" in replies["static_report"].content
    written = chat.files.candidates / "fused.py"
    assert written.read_text() == HONEST and state["candidate"] == str(written)
    assert state["verdicts"][str(written)]["status"] == "ok"
    assert "verdict: ok" in replies["write_candidate"].content and "-        return torch.relu(x)" in \
        replies["write_candidate"].content
    assert state["gpu_s"] > 0
    # The three judgments (timed, correctness only, the written candidate's) went through the session's one worker.
    assert chat.evaluator.stats.worker_starts == 1 and chat.evaluator.stats.judged == 3
    # The model saw the reference and every tool result before its final answer.
    assert "torch.relu(x) * self.scale" in model.requests[0].messages[0].content
    assert len([m for m in model.requests[1].messages if isinstance(m, ToolMessage)]) == len(EVERY_TOOL)


def test_a_tool_error_reaches_the_model_which_recovers(settings, tmp_path):
    model = ScriptedChatModel(script=[
        tool_call("write_candidate", {"name": "../escape", "source": WRONG, "judge": False}),
        tool_call("write_candidate", {"name": "clamped", "source": WRONG, "judge": False}),
        tool_call("judge_candidate", {"timing": "often"}),
        tool_call("no_such_tool", {}),
        "Written as clamped.py; judge it when you want."])
    chat = session(chat_settings(settings, tmp_path), model)
    state = ask(builder().compile(checkpointer=InMemorySaver()), "clamp at 0.5", "t1", chat)

    failed = model.requests[1].messages[-1]
    assert isinstance(failed, ToolMessage) and failed.status == "error" and "candidate name" in failed.content
    assert not (chat.files.root / "escape.py").exists() and not (chat.files.chats_dir / "escape.py").exists()
    written = model.requests[2].messages[-1]
    assert written.status == "success" and "wrote" in written.content and "verdict" not in written.content
    assert (chat.files.candidates / "clamped.py").read_text() == WRONG and state["candidate"].endswith("clamped.py")
    invalid = model.requests[3].messages[-1]
    assert invalid.status == "error" and "invalid arguments" in invalid.content and "source" in invalid.content
    unknown = model.requests[4].messages[-1]
    assert unknown.status == "error" and "there is no tool 'no_such_tool'" in unknown.content
    assert state["messages"][-1].content.startswith("Written as clamped.py")
    assert chat.evaluator.stats is None  # nothing was judged


def test_a_thread_resumes_from_sqlite_with_its_messages_and_candidate(settings, tmp_path):
    settings = chat_settings(settings, tmp_path)
    database = tmp_path / "checkpoints.sqlite"
    first = ScriptedChatModel(script=[tool_call("write_candidate", {"name": "v1", "source": HONEST,
                                                                    "judge": False}), "Written."])
    with sqlite3.connect(database, check_same_thread=False) as conn:
        ask(builder().compile(checkpointer=SqliteSaver(conn)), "write v1", "t1", session(settings, first))

    second = ScriptedChatModel(script=["You asked me to write v1; it is the current candidate."])
    chat = session(settings, second, thread="t1-again")
    with sqlite3.connect(database, check_same_thread=False) as conn:
        state = ask(builder().compile(checkpointer=SqliteSaver(conn)), "what did I ask?", "t1", chat)
    sent = second.requests[0].messages
    assert [m.content for m in sent if isinstance(m, HumanMessage)] == ["write v1", "what did I ask?"]
    assert state["candidate"].endswith("v1.py")
    assert "The current candidate (`v1.py`)" in sent[0].content  # in the system prompt of the resumed thread


def test_the_dollar_budget_stops_the_agent_before_another_call(settings, tmp_path):
    settings = chat_settings(settings, tmp_path)
    settings.llm.prices = {"scripted": {"input_per_mtok": 1.0, "output_per_mtok": 0.0}}
    model = ScriptedChatModel(script=[tool_call("judge_candidate", {"source": HONEST}), "never sent"],
                              usage={"input_tokens": 1_000_000, "output_tokens": 0})
    chat = session(settings, model, budgets=ChatBudgets(usd=0.5))
    graph = builder().compile(checkpointer=InMemorySaver())
    state = ask(graph, "judge it", "t1", chat)
    assert "budget" in state["stop_reason"] and "I stopped" in state["messages"][-1].content
    assert not any(isinstance(m, ToolMessage) for m in state["messages"])
    state = ask(graph, "and now?", "t1", chat)
    assert len(model.requests) == 1 and "I stopped" in state["messages"][-1].content
    assert state["usage"]["total"]["cost_usd"] == 1.0


def test_the_gpu_budget_refuses_judging_and_profiling(settings, tmp_path):
    model = ScriptedChatModel(script=[tool_calls(("judge_candidate", {"source": HONEST}), ("profile", {}),
                                                 ("gpu_specs", {"name": "H200"})), "No GPU time left."])
    chat = session(chat_settings(settings, tmp_path), model, budgets=ChatBudgets(gpu_s=0))
    state = ask(builder().compile(checkpointer=InMemorySaver()), "judge it", "t1", chat)
    replies = {m.name: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert "GPU budget" in replies["judge_candidate"].content and "GPU budget" in replies["profile"].content
    assert "132 SMs" in replies["gpu_specs"].content
    assert chat.evaluator.stats is None  # nothing was judged


def test_spending_beyond_the_setting_asks_first(settings, tmp_path):
    settings = chat_settings(settings, tmp_path)
    settings.chat.confirm_gpu_s = 0
    # The profile's arguments are ones its schema refuses: once allowed to run, it answers at once.
    model = ScriptedChatModel(script=[tool_call("judge_candidate", {"source": HONEST}), "You said no.",
                                      tool_call("profile", {"full": "sometimes"}), "Profiled."])
    chat = session(settings, model)
    graph = builder().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    graph.invoke({"messages": [HumanMessage("judge it")]}, config, context=chat)
    asked = graph.get_state(config).interrupts[0].value
    assert asked == {"kind": "confirm_gpu", "tools": ["judge_candidate"], "spent_gpu_s": 0.0}
    graph.invoke(Command(resume="no"), config, context=chat)
    assert "declined" in model.requests[1].messages[-1].content and chat.evaluator.stats is None
    graph.invoke({"messages": [HumanMessage("profile it then")]}, config, context=chat)
    assert graph.get_state(config).interrupts[0].value["tools"] == ["profile"]
    graph.invoke(Command(resume="yes"), config, context=chat)
    assert "invalid arguments" in model.requests[3].messages[-1].content  # it ran
    assert graph.get_state(config).values["messages"][-1].content == "Profiled."


def test_without_a_model_the_agent_says_so(settings, tmp_path):
    chat = session(chat_settings(settings, tmp_path), None)
    state = ask(builder().compile(checkpointer=InMemorySaver()), "hello", "t1", chat)
    assert isinstance(state["messages"][-1], AIMessage) and "/judge FILE" in state["messages"][-1].content


def test_a_model_without_tool_calling_is_named_and_the_direct_commands_offered(settings, tmp_path):
    chat = session(chat_settings(settings, tmp_path), TextOnlyChatModel(script=[]))
    state = ask(builder().compile(checkpointer=InMemorySaver()), "hello", "t1", chat)
    assert "cannot call tools natively" in state["messages"][-1].content and "/judge FILE" in \
        state["messages"][-1].content


def test_the_studio_graph_opens_the_configured_problem(settings, tmp_path, monkeypatch):
    from kernelpro.app.compose import _studio_session, chat_studio_graph

    monkeypatch.setenv("KERNELPRO_CHAT__REFERENCE", str(REFERENCE))
    monkeypatch.setenv("KERNELPRO_CHAT__DIR", str(tmp_path / "studio"))
    monkeypatch.delenv("KERNELPRO_LLM__MODEL", raising=False)
    _studio_session.cache_clear()
    try:
        graph = chat_studio_graph()
        assert set(graph.get_graph().nodes) == {"__start__", "agent", "tools", "__end__"}
        graph.get_context_jsonschema()  # what Studio asks for first: no error
        state = graph.invoke({"messages": [HumanMessage("hello")]})
        assert "No language model is configured" in state["messages"][-1].content
        assert len(list((tmp_path / "studio").glob("*/thread.json"))) == 1
    finally:
        _studio_session.cache_clear()


def test_a_stopped_answer_runs_no_further_tool_and_writes_no_late_reply(settings, tmp_path):
    chat = None

    def stop_after_asking(messages):  # the user presses Ctrl-C as the reply arrives
        chat.cancel.set()
        return tool_calls(("judge_candidate", {"source": HONEST}), ("gpu_specs", {"name": "H200"}))

    model = ScriptedChatModel(script=[stop_after_asking, "never sent"])
    chat = session(chat_settings(settings, tmp_path), model)
    graph = builder().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    with pytest.raises(Cancelled):
        graph.invoke({"messages": [HumanMessage("judge it")]}, config, context=chat)
    assert len(model.requests) == 1 and chat.evaluator.stats is None
    # The reply came after the stop: it is not in the thread, and the next model call sees none of it.
    assert [type(m).__name__ for m in graph.get_state(config).values["messages"]] == ["HumanMessage"]


def test_a_stop_during_a_round_of_tools_keeps_what_ran_and_starts_no_other_call(settings, tmp_path):
    from langchain_core.tools import StructuredTool

    chat = session(chat_settings(settings, tmp_path), ScriptedChatModel(script=[
        tool_calls(("gpu_specs", {"name": "H200"}), ("judge_candidate", {"source": HONEST})), "never sent"]))
    real = chat.tools["gpu_specs"]

    def specs_then_ctrl_c(name: str) -> str:  # the user presses Ctrl-C while this call runs
        chat.cancel.set()
        return real.invoke({"name": name}).split("\n")[0]

    chat.tools = {**chat.tools, "gpu_specs": StructuredTool.from_function(specs_then_ctrl_c, name="gpu_specs",
                                                                          description=real.description)}
    graph = builder().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    with pytest.raises(Cancelled):
        graph.invoke({"messages": [HumanMessage("judge it")]}, config, context=chat)
    *_, specs, judged = graph.get_state(config).values["messages"]
    assert "132 SMs" in specs.content
    assert judged.name == "judge_candidate" and judged.content == STOPPED and chat.evaluator.stats is None
