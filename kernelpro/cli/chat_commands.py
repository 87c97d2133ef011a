"""The slash commands of `kernelpro chat`: the judge and the profiler without the model, the diff, saving, the
budget. Each returns False to end the session."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

if TYPE_CHECKING:
    from kernelpro.cli.chat_terminal import ChatTerminal

HELP = """\
/judge FILE      judge a candidate file against the reference (it becomes the current candidate)
/profile [FILE]  profile the reference, or a candidate file, and diagnose it
/diff            the current candidate against the one before it (or the reference), beside its verdict
/save NAME       copy the current candidate to NAME (.py added when missing)
/budget          dollars, tokens and GPU seconds spent, and the limits
/show [N]        the N-th tool result in full (default: the last)
/help            this list
/quit            leave (the thread is saved: kernelpro chat --thread ID resumes it)
Ctrl-C stops the answer being written; Ctrl-D or /quit leaves."""


def run(terminal: ChatTerminal, line: str) -> bool:
    name, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    out = terminal.console
    if name in ("/quit", "/exit", "/q"):
        return False
    if name == "/help":
        out.print(HELP, markup=False, highlight=False)
    elif name == "/judge":
        _judge(terminal, rest)
    elif name == "/profile":
        _profile(terminal, rest)
    elif name == "/diff":
        _diff(terminal)
    elif name == "/save":
        _save(terminal, rest)
    elif name == "/budget":
        out.print(terminal.budget_text(), highlight=False)
    elif name == "/show":
        terminal.view.show(int(rest) if rest.isdigit() else None)
    else:
        out.print(f"unknown command {escape(name)}; /help lists them")
    return True


def _file(terminal: ChatTerminal, text: str) -> Path | None:
    path = Path(text).expanduser()
    if not path.is_file():
        terminal.console.print(f"[red]no file {escape(text)}[/]")
        return None
    return path


def _judge(terminal: ChatTerminal, text: str) -> None:
    if not text:
        terminal.console.print("/judge FILE: which candidate?")
        return
    path = _file(terminal, text)
    if path is None or not terminal.confirm_gpu(["judge_candidate"]):
        return
    terminal.console.print(f"judging {escape(str(path))} ...")
    reply = terminal.wait_for(lambda: terminal.conversation.judge_file(path))
    terminal.view.tool_result(reply)
    _diff(terminal)


def _profile(terminal: ChatTerminal, text: str) -> None:
    path = _file(terminal, text) if text else None
    if (text and path is None) or not terminal.confirm_gpu(["profile"]):
        return
    terminal.console.print(f"profiling {escape(str(path) if path else 'the reference')} ...")
    reply = terminal.wait_for(lambda: terminal.conversation.profile_file(path))
    terminal.view.tool_result(reply)
    terminal.console.print(reply.content, markup=False, highlight=False, soft_wrap=True)


def _diff(terminal: ChatTerminal) -> None:
    from kernelpro.cli.chat_view import side_by_side

    try:
        diff, verdict, candidate = terminal.conversation.current_diff()
    except (ValueError, OSError) as error:
        terminal.console.print(escape(str(error)))
        return
    terminal.console.print(side_by_side(diff, verdict, candidate))


def _save(terminal: ChatTerminal, name: str) -> None:
    candidate = terminal.state().get("candidate", "")
    if not name:
        terminal.console.print("/save NAME: where to?")
    elif not candidate:
        terminal.console.print("there is no candidate to save yet")
    else:
        target = Path(name if name.endswith(".py") else f"{name}.py").expanduser()
        if target.exists():
            terminal.console.print(f"[red]{escape(str(target))} exists; nothing overwritten: choose another name[/]")
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(candidate, target)
        terminal.console.print(f"saved {escape(candidate)} as {escape(str(target))}")
