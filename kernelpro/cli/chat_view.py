"""How `kernelpro chat` shows a conversation: the answer streamed as Markdown, one line per tool call with its
result folded (``/show N`` unfolds it), a candidate's diff beside its verdict."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

from kernelpro.chat.verdict import verdict_summary


def _argument(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    if isinstance(value, str) and ("\n" in text or len(text) > 40):
        return f"<{text.count(chr(10)) + 1} lines>" if "\n" in text else repr(text[:37] + "...")
    return repr(value) if isinstance(value, str) else text[:40]


def call_line(name: str, args: dict[str, Any]) -> str:
    return f"{name}(" + ", ".join(f"{key}={_argument(value)}" for key, value in args.items()) + ")"


def side_by_side(diff: str, verdict: dict[str, Any] | None, title: str) -> Table:
    """The diff on the left, the verdict on the right."""
    grid = Table.grid(expand=True, padding=(0, 1))
    grid.add_column(ratio=3)
    grid.add_column(ratio=2)
    if verdict is None:
        right = Panel("not judged yet: /judge it", title="verdict")
    else:
        lines = [f"[bold]{escape(verdict_summary(verdict))}[/]", escape(verdict.get("message", ""))]
        lines += [escape(f"guard {g.get('severity')} {g.get('reason')}: {g.get('message')}")
                  for g in verdict.get("guards") or []]
        right = Panel("\n".join(lines), title="verdict", border_style="green" if verdict.get("status") == "ok"
                      else "red")
    grid.add_row(Panel(Syntax(diff, "diff", word_wrap=True), title=escape(title)), right)
    return grid


class ChatView:
    """One answer at a time: tokens into a live Markdown block, tool results as folded lines."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.results: list[ToolMessage] = []
        self.buffer = ""  # the text of the model turn being streamed
        self.streamed = False  # whether anything of this turn was shown already
        self.calls: dict[str, dict[str, Any]] = {}  # tool call id -> its arguments
        self._live: Live | None = None
        self._status: Any = None

    def token(self, text: str) -> None:
        if not text:
            return
        self.buffer += text
        self.streamed = True
        if not self.console.is_terminal:
            self.console.file.write(text)
            self.console.file.flush()
            return
        if self._live is None:
            self._live = Live(Markdown(self.buffer), console=self.console, refresh_per_second=12,
                              vertical_overflow="visible")
            self._live.start()
        self._live.update(Markdown(self.buffer))

    def end_turn(self, message: AIMessage | None) -> None:
        """The model's turn is complete: show it if it was not streamed, remember its calls, and while they run,
        a spinner naming them (it gives way to one line per call when they are done)."""
        if message is not None and not self.streamed and message.text.strip():
            self.console.print(Markdown(message.text))
        self.close_live()
        if message is not None:
            self.calls.update({c["id"]: c for c in message.tool_calls})
            if message.tool_calls and self.console.is_terminal:
                names = ", ".join(c["name"] for c in message.tool_calls)
                self._status = self.console.status(f"running {escape(names)} ...")
                self._status.start()
        self.buffer, self.streamed = "", False

    def close_live(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
        if self._live is not None:
            self._live.stop()
            self._live = None
        elif self.streamed and not self.console.is_terminal:
            self.console.file.write("\n")

    def tool_result(self, message: ToolMessage) -> None:
        self.close_live()
        self.results.append(message)
        call = self.calls.get(message.tool_call_id, {"name": message.name, "args": {}})
        lines = message.content.splitlines() if isinstance(message.content, str) else [str(message.content)]
        head = next((line for line in lines if line.strip()), "")
        fold = f" [dim][+{len(lines) - 1} lines: /show {len(self.results)}][/]" if len(lines) > 1 else ""
        colour = "red" if message.status == "error" else "cyan"
        self.console.print(f"  [{colour}]⚙ {escape(call_line(call['name'], call.get('args', {})))}[/] → "
                           f"{escape(head[:160])}{fold}", soft_wrap=True, highlight=False)
        artifact = message.artifact if isinstance(message.artifact, dict) else {}
        if message.name == "write_candidate" and artifact.get("diff"):
            self.console.print(side_by_side(artifact["diff"], artifact.get("verdict"), artifact.get("path", "")))

    def show(self, index: int | None) -> None:
        if not self.results:
            self.console.print("no tool result yet")
            return
        position = len(self.results) if index is None else index
        if not 1 <= position <= len(self.results):
            self.console.print(f"/show takes 1 to {len(self.results)}")
            return
        message = self.results[position - 1]
        self.console.rule(f"{position}: {message.name}")
        self.console.print(message.content, markup=False, highlight=False, soft_wrap=True)
