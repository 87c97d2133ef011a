"""The `kernelpro chat` session at the terminal: the prompt line with the budgets, answers streamed from the
graph, a yes or no before more GPU time, Ctrl-C that stops one answer and keeps the session."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from rich.console import Console
from rich.markup import escape

from kernelpro.chat.graph import STOPPED, Cancelled
from kernelpro.chat.session import ChatSession
from kernelpro.cli import chat_commands
from kernelpro.cli.chat_view import ChatView

ABANDON_AFTER_S = 2.0


class ChatTerminal:
    def __init__(self, console: Console, session: ChatSession, graph: Any, config: dict[str, Any]) -> None:
        self.console, self.session, self.graph, self.config = console, session, graph, config
        self.view = ChatView(console)

    def state(self) -> dict[str, Any]:
        return self.graph.get_state(self.config).values

    # ---- the budgets ------------------------------------------------------------------------------------------

    def _spent(self) -> tuple[float, float]:
        state = self.state()
        return self.session.usd_spent(), state.get("gpu_s", 0.0) or 0.0

    def prompt_line(self) -> str:
        usd, gpu_s = self._spent()
        budgets = self.session.budgets
        usd_text = f"${usd:.3f}" + (f"/${budgets.usd:.2f}" if budgets.usd is not None else "")
        gpu_text = f"{gpu_s:.0f}" + (f"/{budgets.gpu_s:.0f}" if budgets.gpu_s is not None else "") + " s"
        device = "GPU" if self.session.device == "cuda" else "CPU"
        return f"[dim]{escape(self.session.files.thread_id)} | {usd_text} | {device} {gpu_text}[/] [bold]>[/] "

    def budget_text(self) -> str:
        usd, gpu_s = self._spent()
        total = self.session.meter.total if self.session.meter is not None else None
        budgets, confirm = self.session.budgets, self.session.confirm_gpu_s
        tokens = f" ({total.prompt_tokens} prompt + {total.completion_tokens} completion tokens in {total.calls} " \
                 f"calls{'' if total.priced else '; some unpriced'})" if total is not None else ""
        return "\n".join([
            f"model calls: ${usd:.4f} of " + (f"${budgets.usd:.2f}" if budgets.usd is not None else "no limit")
            + tokens,
            f"judging and profiling: {gpu_s:.1f} s of "
            + (f"{budgets.gpu_s:.0f} s" if budgets.gpu_s is not None else "no limit"),
            "asks before more GPU time " + (f"once {confirm:.0f} s are spent" if confirm is not None else "never")])

    def confirm_gpu(self, tools: list[str]) -> bool:
        """Whether to spend GPU time: yes below the setting, the user's word beyond it, no once the budget is spent."""
        _, gpu_s = self._spent()
        budget = self.session.budgets.gpu_s
        if budget is not None and gpu_s >= budget:
            self.console.print(f"[yellow]the GPU budget ({budget:.0f} s) is spent; not run[/]")
            return False
        confirm = self.session.confirm_gpu_s
        if confirm is None or gpu_s < confirm:
            return True
        try:
            answer = self.console.input(f"[yellow]{gpu_s:.0f} s of GPU time spent; run {', '.join(tools)}? "
                                        "[y/N][/] ")
        except (KeyboardInterrupt, EOFError):
            return False
        return answer.strip().lower() in ("y", "yes")

    def wait_for(self, work: Any) -> Any:
        """``work()`` in a thread of its own, waited for: Ctrl-C does not cut a judgment or a profile short (the
        worker would be left mid-job), it is told so, and the result is kept."""
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["value"] = work()
            except BaseException as error:  # noqa: BLE001 - handed to the terminal's thread
                outcome["error"] = error

        thread = threading.Thread(target=run, name="chat-command", daemon=True)
        thread.start()
        told = False
        while thread.is_alive():
            try:
                thread.join(timeout=0.2)
            except KeyboardInterrupt:
                if not told:
                    self.console.print("[yellow]the call under way finishes first; its result is kept[/]")
                    told = True
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("value")

    # ---- the conversation -------------------------------------------------------------------------------------

    def loop(self) -> None:
        while True:
            try:
                line = self.console.input(self.prompt_line())
            except EOFError:
                self.console.print()
                return
            except KeyboardInterrupt:
                self.console.print("\n(Ctrl-C stops an answer; /quit or Ctrl-D leaves)")
                continue
            if not line.strip():
                continue
            if line.startswith("/"):
                try:
                    if not chat_commands.run(self, line):
                        return
                except KeyboardInterrupt:
                    self.console.print("[yellow]stopped[/]")
                except Exception as error:  # noqa: BLE001 - a command that fails leaves the session as it was
                    self.console.print(f"[red]{escape(line.split()[0])} failed: "
                                       f"{escape(f'{type(error).__name__}: {error}')}[/]", soft_wrap=True)
                continue
            self.answer({"messages": [HumanMessage(line)]})

    def answer(self, feed: Any) -> None:
        from langgraph.types import Command

        while True:
            try:
                self._stream(feed)
            except KeyboardInterrupt:
                self._stopped()
                return
            except Exception as error:  # noqa: BLE001 - the thread is kept: the next message goes on from it
                self.view.close_live()
                self.console.print(f"[bold red]the answer failed:[/] {escape(f'{type(error).__name__}: {error}')}",
                                   soft_wrap=True)
                return
            interrupts = self.graph.get_state(self.config).interrupts
            if not interrupts:
                return
            request = interrupts[0].value
            feed = Command(resume="yes" if self.confirm_gpu(request.get("tools", [])) else "no")

    def _stream(self, feed: Any) -> None:
        """The graph runs in a thread of its own (its nodes run in a pool, where Ctrl-C cannot reach them); this
        thread shows what it streams and stays interruptible."""
        self._node = "agent"
        items: queue.Queue[tuple[str, Any]] = queue.Queue()

        def produce() -> None:
            try:
                for item in self.graph.stream(feed, self.config, context=self.session,
                                              stream_mode=["messages", "updates"], durability="sync"):
                    items.put(("item", item))
            except BaseException as error:  # noqa: BLE001 - handed to the terminal's thread
                items.put(("error", error))
            items.put(("done", None))

        self._producer = threading.Thread(target=produce, name="chat-answer", daemon=True)
        self._producer.start()
        while True:
            try:
                kind, payload = items.get(timeout=0.2)
            except queue.Empty:
                continue
            if kind == "done":
                return
            if kind == "error":
                if isinstance(payload, Cancelled):
                    raise KeyboardInterrupt from payload
                raise payload
            self._show(*payload)

    def _show(self, mode: str, chunk: Any) -> None:
        if mode == "messages":
            message, metadata = chunk
            if metadata.get("langgraph_node") == "agent" and isinstance(message, (AIMessage, AIMessageChunk)):
                self.view.token(message.text)
            return
        for node, values in chunk.items():
            messages = (values or {}).get("messages", []) if isinstance(values, dict) else []
            if node == "agent":
                last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
                for said in messages[:-1]:  # a reply that spent the budget, then the stop notice
                    self.view.end_turn(said)
                self.view.end_turn(last)
                self._node = "tools" if last is not None and last.tool_calls else "agent"
            elif node == "tools":
                for message in messages:
                    if isinstance(message, ToolMessage):
                        self.view.tool_result(message)
                self._node = "agent"

    def _stopped(self) -> None:
        """Ctrl-C: a reply stops at once (one still to come is dropped when it comes), a round of tool calls before
        its next call (a judgment under way runs to its end); what was said is kept, open calls answered as
        stopped."""
        self.session.cancel.set()
        partial = self.view.buffer
        self.view.close_live()
        self.view.buffer, self.view.streamed = "", False
        in_tools = self._node == "tools"
        self.console.print("[yellow]stopped[/]" + (" (the running tool call finishes first)" if in_tools else ""))
        # A round of tools is waited for; a model call is given a moment to see its event, then left behind if it
        # still waits for its first token (its reply, when it comes, is dropped).
        deadline = time.monotonic() + ABANDON_AFTER_S
        while self._producer.is_alive() and (in_tools or time.monotonic() < deadline):
            try:
                self._producer.join(timeout=0.2)
            except KeyboardInterrupt:
                continue
        self.session.cancel = threading.Event()  # the next answer's; the stopped one keeps its own, set
        messages = self.state().get("messages", [])
        update: list[Any] = []
        last = messages[-1] if messages else None
        if isinstance(last, AIMessage) and last.tool_calls:
            update += [ToolMessage(STOPPED, tool_call_id=c["id"], name=c["name"], status="error")
                       for c in last.tool_calls]
        update.append(AIMessage((partial.rstrip() + "\n\n" if partial.strip() else "") + "(stopped by the user)"))
        self.graph.update_state(self.config, {"messages": update}, as_node="agent")
