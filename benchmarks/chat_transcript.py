"""One `kernelpro chat` on a GPU, driven as a person would at a terminal, with a replayed model.

The loopback OpenAI-compatible test server (``tests/support/openai_server.py``) plays the model with a scripted
conversation; everything else is real: the CLI on a pseudo-terminal, the session's judge, Nsight Compute. The
conversation about a real slow CUDA candidate (``benchmarks/problems/chat/slow_scale_relu.py``: ReLU-and-scale
over 32M floats launched on 4 blocks):

    /profile                                    (the direct command: the reference under Nsight Compute)
    /judge the slow candidate                   (the direct command: its verdict against the reference)
    "why is my kernel slow?"                    -> profile (ncu, diagnosis) -> read_metrics -> an answer quoting both
    "fix it and judge it"                       -> write_candidate (the fix, judged; diff beside verdict) -> answer
    /diff, /budget, /quit

Run on the GPU host from the repository root (nothing to prepare or carry):

    python benchmarks/chat_transcript.py --out "$OUT"

It writes under ``$OUT/chat_transcript/``: ``transcript.txt`` (the terminal as shown, escape codes removed),
``transcript.md`` (the thread read back from its SQLite checkpoint: every message, tool call and result),
``requests.json`` (what the chat sent the model), ``summary.json`` (both verdicts, the profile's headline, the
time spent) and ``chats/`` (the thread: checkpoints.sqlite, thread.json, the candidates and their verdicts, the
ncu profiles). ``--device cpu`` with CPU candidates (``--problem``, ``--slow``, ``--fixed``) tries it without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.openai_server import Completion, OpenAIServer, probe_reply  # noqa: E402
from tests.support.pty_terminal import Terminal  # noqa: E402

CHAT = ROOT / "benchmarks" / "problems" / "chat"
THREAD = "h200-transcript"
METRICS = ["launch__grid_size", "launch__waves_per_multiprocessor", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed", "gpu__time_duration.sum"]


def _tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def _quote(text: str, lines: int) -> str:
    kept = [line for line in text.splitlines() if line.strip()][:lines]
    return "\n".join(f"> {line}" for line in kept)


def replay(server: OpenAIServer, slow: str, fixed: str) -> None:
    """The model's side of the conversation; its answers quote what the tools actually returned."""
    def ask_profile(body: dict) -> Completion:
        return Completion("Let me profile your candidate with Nsight Compute first.", [("profile", {"source": slow})])

    def ask_metrics(body: dict) -> Completion:
        return Completion("Now the launch figures of that profile.", [("read_metrics", {"metrics": METRICS})])

    def explain(body: dict) -> Completion:
        profile, metrics = _tool_results(body)[-2:]
        return Completion(f"What the profiler found:\n\n{_quote(profile, 14)}\n\nThe raw metrics:\n\n"
                          f"{_quote(metrics, 8)}\n\nYour kernel is launched on 4 blocks of 256 threads, so only 4 "
                          "SMs run the grid-stride loop while the rest of the GPU idles: the grid, not the memory "
                          "system, limits it. Launch one thread per element (n / 256 blocks) and every SM streams "
                          "its share.")

    def write_fix(body: dict) -> Completion:
        return Completion("Here is the kernel launched on enough blocks to cover every element once.",
                          [("write_candidate", {"name": "full_grid", "source": fixed})])

    def verdict(body: dict) -> Completion:
        result = _tool_results(body)[-1]
        line = next((x for x in result.splitlines() if x.startswith("verdict:")), "no verdict line")
        return Completion(f"The judge's word on the fix: **{line.removeprefix('verdict: ')}**. The diff and the "
                          "full verdict are above; /diff shows them again.")

    steps = iter([ask_profile, ask_metrics, explain, write_fix, verdict])
    server.responder = lambda body: probe_reply(body) or next(steps)(body)


def environment(server: OpenAIServer, scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    env.update({"KERNELPRO_LLM__MODEL": "openai/test-model", "KERNELPRO_LLM__API_BASE": server.base_url,
                "KERNELPRO_LLM__API_KEY": "sk-loopback", "KERNELPRO_LLM__PRICES":
                json.dumps({"openai/test-model": {"input_per_mtok": 0.0, "output_per_mtok": 0.0}}),
                "KERNELPRO_MEMORY__PATH": str(scratch / "memory"), "KERNELPRO_CHAT__CONFIRM_GPU_S": "1e9",
                "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    return env


def conversation(term: Terminal, slow_path: Path, took: dict[str, float]) -> None:
    """Each step's seconds go into ``took`` as it ends, so a conversation cut short keeps the steps it made."""
    prompt = rf"{THREAD} \| \$[0-9.]+ \| (GPU|CPU) \d+ s > "

    def step(name: str, keys: str, until: str, timeout: float) -> None:
        start = time.monotonic()
        term.send(keys)
        term.expect(until, timeout)
        if until != prompt:
            term.expect(prompt, timeout)
        took[name] = round(time.monotonic() - start, 1)

    term.expect(prompt, 300)
    step("profile_reference", "/profile\r", prompt, 400)
    step("judge_slow", f"/judge {slow_path}\r", prompt, 400)
    step("why_slow", "Why is my kernel slow?\r", r"every SM streams\s+its share\.", 500)
    step("fix", "Fix it and judge it against the reference.\r", r"/diff shows them\s+again\.", 500)
    step("diff", "/diff\r", prompt, 60)
    step("budget", "/budget\r", prompt, 60)
    term.send("/quit\r")
    term.expect("resume with: kernelpro chat --thread", 60)


def thread_markdown(chats: Path) -> tuple[str, dict]:
    """The thread as its checkpoint holds it."""
    import sqlite3

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.sqlite import SqliteSaver

    from kernelpro.chat.graph import builder

    with sqlite3.connect(chats / "checkpoints.sqlite", check_same_thread=False) as conn:
        state = builder().compile(checkpointer=SqliteSaver(conn)).get_state(
            {"configurable": {"thread_id": THREAD}}).values
    out = [f"# kernelpro chat: thread {THREAD}\n"]
    for message in state.get("messages", []):
        if isinstance(message, HumanMessage):
            out.append(f"## user\n\n{message.text}\n")
        elif isinstance(message, AIMessage):
            out.append(f"## assistant\n\n{message.text}\n")
            out += [f"- tool call `{c['name']}` with arguments `{', '.join(c['args'])}`" for c in message.tool_calls]
        elif isinstance(message, ToolMessage):
            out.append(f"### {message.name} ({message.status})\n\n```\n{message.text}\n```\n")
    return "\n".join(out), state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--problem", type=Path, default=ROOT / "benchmarks" / "problems" / "scale_relu_32m.py")
    parser.add_argument("--slow", type=Path, default=CHAT / "slow_scale_relu.py")
    parser.add_argument("--fixed", type=Path, default=CHAT / "fixed_scale_relu.py")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a caller's timeout still leaves what was said
    out = args.out / "chat_transcript"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    chats = out / "chats"
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch, OpenAIServer() as server:
        replay(server, args.slow.read_text(), args.fixed.read_text())
        term = Terminal([sys.executable, "-m", "kernelpro.cli", "chat", str(args.problem.resolve()),
                         str(args.slow.resolve()), "--device", args.device, "--thread", THREAD, "--chats-dir",
                         str(chats)], environment(server, Path(scratch)), Path(scratch))
        took: dict[str, float] = {}
        failed = None
        try:
            conversation(term, args.slow.resolve(), took)
            term.proc.wait(timeout=60)
        except (Exception, SystemExit) as error:  # noqa: BLE001 - a step that fails still leaves its transcript
            failed = f"{type(error).__name__}: {error}"
        finally:
            (out / "transcript.txt").write_text(term.plain_log)
            term.close()
        bodies = [{"messages": r.body["messages"], "tools": [t["function"]["name"] for t in r.body.get("tools", [])]}
                  for r in server.completions]
    (out / "requests.json").write_text(json.dumps(bodies, indent=1))
    markdown, state = thread_markdown(chats)
    (out / "transcript.md").write_text(markdown)
    verdicts = state.get("verdicts", {})
    summary = {"problem": str(args.problem.relative_to(ROOT)) if args.problem.is_relative_to(ROOT) else
               str(args.problem), "device": args.device, "exit_code": term.proc.returncode, "seconds": took,
               "wall_s": round(time.monotonic() - start, 1), "gpu_s": state.get("gpu_s"),
               "model_requests": len(bodies), "failed": failed,
               "verdicts": {Path(path).name: {k: v.get(k) for k in ("status", "reason", "speedup", "speedup_ci95",
                                                                    "speed_verdict", "candidate_ms",
                                                                    "reference_ms")}
                            for path, v in verdicts.items()}}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    if failed:
        sys.exit(f"the conversation stopped early: {failed}")


if __name__ == "__main__":
    main()
