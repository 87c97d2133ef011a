"""The `kernelpro chat` session at the terminal: the prompt line with the budgets, the answer's events
(``chat/turn.py``'s ``Conversation``) shown as they stream, a yes or no before more GPU time, Ctrl-C that stops
one answer and keeps the session."""

from __future__ import annotations

import threading
from typing import Any

from rich.console import Console
from rich.markup import escape

from kernelpro.chat.turn import Cancelled, ChatEvent, ConfirmGpu, Conversation, Token, ToolReplied, TurnEnded
from kernelpro.cli import chat_commands
from kernelpro.cli.chat_view import ChatView


class ChatTerminal:
    def __init__(self, console: Console, conversation: Conversation) -> None:
        self.console, self.conversation = console, conversation
        self.session = conversation.session
        self.view = ChatView(console)

    def state(self) -> dict[str, Any]:
        return self.conversation.state()

    # ---- the budgets ------------------------------------------------------------------------------------------

    def prompt_line(self) -> str:
        usd, gpu_s = self.conversation.spent()
        budgets = self.session.budgets
        usd_text = f"${usd:.3f}" + (f"/${budgets.usd:.2f}" if budgets.usd is not None else "")
        gpu_text = f"{gpu_s:.0f}" + (f"/{budgets.gpu_s:.0f}" if budgets.gpu_s is not None else "") + " s"
        device = "GPU" if self.session.device == "cuda" else "CPU"
        return f"[dim]{escape(self.session.files.thread_id)} | {usd_text} | {device} {gpu_text}[/] [bold]>[/] "

    def budget_text(self) -> str:
        usd, gpu_s = self.conversation.spent()
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
        decision = self.conversation.gpu_decision()
        if decision == "spent":
            self.console.print(f"[yellow]the GPU budget ({self.session.budgets.gpu_s:.0f} s) is spent; not run[/]")
            return False
        if decision == "yes":
            return True
        _, gpu_s = self.conversation.spent()
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
            self.answer(line)

    def answer(self, line: str) -> None:
        events = self.conversation.say(line)
        while True:
            try:
                question = self._show_all(events)
            except (KeyboardInterrupt, Cancelled):
                self._stopped()
                return
            except Exception as error:  # noqa: BLE001 - the thread is kept: the next message goes on from it
                self.view.close_live()
                self.console.print(f"[bold red]the answer failed:[/] {escape(f'{type(error).__name__}: {error}')}",
                                   soft_wrap=True)
                return
            if question is None:
                return
            events = self.conversation.confirm(self.confirm_gpu(question.tools))

    def _show_all(self, events: Any) -> ConfirmGpu | None:
        """Each event of the answer shown as it comes; the question it ends at, if any."""
        for event in events:
            if isinstance(event, ConfirmGpu):
                return event
            self._show(event)
        return None

    def _show(self, event: ChatEvent) -> None:
        if isinstance(event, Token):
            self.view.token(event.text)
        elif isinstance(event, TurnEnded):
            self.view.end_turn(event.message)  # type: ignore[arg-type]
        elif isinstance(event, ToolReplied):
            self.view.tool_result(event.message)

    def _stopped(self) -> None:
        """Ctrl-C: a reply stops at once (one still to come is dropped when it comes), a round of tool calls before
        its next call (a judgment under way runs to its end); what was said is kept, open calls answered as
        stopped."""
        in_tools = self.conversation.cancel()
        partial = self.view.buffer
        self.view.close_live()
        self.view.buffer, self.view.streamed = "", False
        self.console.print("[yellow]stopped[/]" + (" (the running tool call finishes first)" if in_tools else ""))
        self.conversation.settle_stop(partial)
