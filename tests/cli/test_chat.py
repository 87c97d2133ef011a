"""`kernelpro chat` end to end in a real process on a pseudo-terminal: the loopback OpenAI-compatible server plays
the model (streamed replies with tool calls, through LiteLLM over HTTP), the real CPU judge judges, the thread
checkpoints to SQLite. Asserts on what the agent sent and the files it wrote; Ctrl-C stops one answer only."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from tests.cli.test_optimize import PROBLEM, environment
from tests.graphs.helpers import HONEST
from tests.support.openai_server import Completion, OpenAIServer, openai_server_fixture  # noqa: F401
from tests.support.pty_terminal import Terminal

ROOT = Path(__file__).resolve().parents[2]
HONEST_FILE = ROOT / "tests" / "data" / "candidates" / "honest_scale_relu.py"


FUSED = HONEST.replace("torch.clamp(x, min=0.0) * self.scale", "torch.relu(x).mul_(self.scale)")
PROMPT = r"pty \| \$[0-9.]+/\$5\.00 \| CPU \d+ s > "


def test_chat_on_a_terminal_writes_and_judges_a_candidate_and_survives_ctrl_c(openai_server, tmp_path):
    release = threading.Event()
    replies = iter([
        Completion("I will fuse the scale into the ReLU.", [("write_candidate", {"name": "fused", "source": FUSED})]),
        Completion("The fused candidate is correct; its speed is within the noise."),
    ])

    def respond(body: dict) -> Completion:
        if [t["function"]["name"] for t in body.get("tools", [])] == ["report_ready"]:  # the tool-calling probe
            return Completion(tool_calls=[("report_ready", {"ready": True})])
        reply = next(replies, None)
        if reply is None:  # the question that the user stops with Ctrl-C: no answer comes in time
            release.wait(timeout=60)
            return Completion("too late")
        return reply

    openai_server.responder = respond
    env = environment(openai_server, tmp_path)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")  # this checkout's kernelpro
    term = Terminal([sys.executable, "-m", "kernelpro.cli", "chat", str(PROBLEM), "--device", "cpu", "--thread",
                     "pty", "--usd-budget", "5"], env, tmp_path)
    try:
        opening = term.expect(PROMPT)
        assert "the chat calls tools by native tool calling (openai/test-model: LiteLLM does not know it; the " \
            "server answered a probe with a proper tool call)" in " ".join(opening.split())
        term.send("make it faster\r")
        shown = term.expect(r"within the noise\.")
        assert "write_candidate(name='fused', source=<12 lines>)" in shown and "wrote" in shown
        assert "verdict" in shown and "ok" in shown
        term.expect(PROMPT)

        term.send("and why is it not faster?\r")
        deadline = time.monotonic() + 60
        while len(openai_server.completions) < 4 and time.monotonic() < deadline:  # the probe, then 3 turns
            time.sleep(0.1)
        term.send("\x03")
        term.expect("stopped")
        term.expect(PROMPT)  # the session goes on
        release.set()
        term.send("/budget\r")
        assert "judging and profiling:" in term.expect(PROMPT)
        term.send("/show 1\r")  # the first tool result, unfolded
        assert "diff against scale_relu.py:" in term.expect(PROMPT)
        term.send("/save best\r")
        term.expect("saved .*fused.py as best.py")
        term.expect(PROMPT)
        term.send("/save best\r")
        term.expect("exists; nothing overwritten")
        term.expect(PROMPT)
        term.send(f"/judge {HONEST_FILE}\r")  # the direct command, through the same worker
        shown = term.expect(PROMPT)
        assert "judge_candidate() → ok" in shown and "verdict" in shown
        term.send("/quit\r")
        term.expect("resume with: kernelpro chat --thread pty")
        assert term.proc.wait(timeout=30) == 0
    finally:
        release.set()
        term.close()

    probe, first, second = (r.body for r in openai_server.completions[:3])
    assert probe["tools"][0]["function"]["name"] == "report_ready"  # once, before the first question
    system = first["messages"][0]
    assert system["role"] == "system" and "torch.relu(x) * self.scale" in system["content"]
    assert first["messages"][-1] == {"role": "user", "content": "make it faster"}
    assert {"write_candidate", "judge_candidate", "profile", "diagnose", "read_metrics", "static_report",
            "compile_check", "cutlass_search", "memory_search", "gpu_specs"} <= \
        {tool["function"]["name"] for tool in first["tools"]}
    assert first.get("stream") is True
    result = next(m for m in second["messages"] if m["role"] == "tool")
    assert "wrote" in result["content"] and "verdict: ok" in result["content"]
    assert "The current candidate (`fused.py`)" in second["messages"][0]["content"]

    thread = tmp_path / "kernelpro-chats" / "pty"
    assert (thread / "candidates" / "fused.py").read_text() == FUSED
    assert json.loads((thread / "candidates" / "fused.json").read_text())["status"] == "ok"
    assert json.loads((thread / "thread.json").read_text())["budgets"]["usd"] == 5.0
    assert (tmp_path / "kernelpro-chats" / "checkpoints.sqlite").is_file()
    assert (tmp_path / "best.py").read_text() == FUSED


def test_without_a_model_the_chat_says_so_and_a_thread_resumes_with_its_budgets(tmp_path, monkeypatch):
    """In process (typer's runner feeds the prompt): no model, so no judge and no LiteLLM are needed."""
    from typer.testing import CliRunner

    from kernelpro.cli.main import app

    for name in [n for n in os.environ if n.startswith("KERNELPRO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KERNELPRO_HARNESS__REFEREE", "false")
    monkeypatch.chdir(tmp_path)
    chats = tmp_path / "chats"
    runner = CliRunner()
    first = runner.invoke(app, ["chat", str(PROBLEM), str(HONEST_FILE), "--device", "cpu", "--thread", "t1",
                                "--chats-dir", str(chats), "--gpu-budget", "5m"], input="hello\n/diff\n/quit\n")
    assert first.exit_code == 0, first.output
    assert "No language model is configured" in first.output and "/judge FILE" in first.output
    resume = f"kernelpro chat --thread t1 --chats-dir {chats}"
    assert f"resume this thread with a model:\n  {resume} --model MODEL\n" in first.output
    assert f"configure one as below and resume it with: {resume}\n" in first.output
    assert f"thread saved; resume with: {resume}\n" in first.output
    assert "not judged yet" in first.output  # /diff: the candidate given, beside no verdict yet
    assert json.loads((chats / "t1" / "thread.json").read_text())["candidate_path"] == str(HONEST_FILE)

    again = runner.invoke(app, ["chat", "--thread", "t1", "--chats-dir", str(chats)], input="/budget\n/quit\n")
    assert again.exit_code == 0, again.output
    assert "resumed after 1 messages" in again.output and "of 300 s" in again.output
    listed = runner.invoke(app, ["chat", "--list", "--chats-dir", str(chats)])
    assert "t1" in listed.output and "scale_relu.py" in listed.output


def test_the_thread_list_prints_every_id_whole_however_narrow_the_terminal(tmp_path):
    from typer.testing import CliRunner

    from kernelpro.chat.files import ChatFiles
    from kernelpro.cli.main import app

    chats = tmp_path / "chats"
    ids = ["20261207-162438-19_ConvTranspose2d_GELU_GroupNorm_Tanh-54fb", "t1"]
    for thread, model in zip(ids, ["anthropic/claude-sonnet-4-5", None], strict=True):
        ChatFiles.create(chats, thread, {"problem_path": str(PROBLEM), "device": "cpu", "model": model,
                                         "candidate_path": str(HONEST_FILE)})
    for columns in (40, 80, 250):
        listed = CliRunner().invoke(app, ["chat", "--list", "--chats-dir", str(chats)],
                                    env={"COLUMNS": str(columns), "HOME": str(tmp_path)})
        assert listed.exit_code == 0, listed.output
        words = {word.strip("│┃") for line in listed.output.splitlines() for word in line.split()}
        assert set(ids) <= words, (columns, listed.output)
        assert "scale_relu.py" in listed.output and "anthropic/claude-sonnet-4-5" in listed.output
        assert "…" not in listed.output  # nothing else cut either
