"""What `kernelpro optimize` shows and asks at the terminal: one line per step, and the answers to interrupts."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape


class Progress:
    """One line per step on the terminal: the node, what happened (each candidate named by its recipe or idea
    beside its id), best speedup so far, candidates judged, spend (GPU time only where a GPU judges).

    ``state``: the run's state so far, when it is resumed, so the counts go on from where it stopped."""

    def __init__(self, console: Console, max_iters: int, device: str = "cuda",
                 state: dict[str, Any] | None = None) -> None:
        self.console, self.max_iters, self.on_gpu = console, max_iters, device != "cpu"
        self.best: tuple[str, float, list[float] | None] | None = None  # id, speedup, its interval
        self.judged, self.usd, self.gpu_s = 0, 0.0, 0.0
        self.names: dict[str, str] = {}  # variant id -> its recipe's or idea's name
        if state:
            self._take(state)

    def _take(self, values: dict[str, Any]) -> None:
        from kernelpro.graphs.views import judged_count
        from kernelpro.search.tree import Variant

        for data in (values.get("variants") or {}).values():
            variant = Variant.model_validate(data)
            if name := variant_name(variant):
                self.names[variant.id] = name
            if variant.improves and (self.best is None or (variant.deciding_speedup or 0.0) > self.best[1]):
                self.best = (variant.id, variant.deciding_speedup or 0.0, variant.speedup_ci95)
        if "iteration" in values:  # a candidate answered from an earlier verdict is not one judged
            self.judged = judged_count(values)
        self.gpu_s += values.get("gpu_s", 0.0) or 0.0
        if values.get("usage"):
            self.usd = values["usage"].get("total", {}).get("cost_usd", self.usd)

    def update(self, node: str, values: dict[str, Any]) -> None:
        if not isinstance(values, dict):
            return
        from kernelpro.search.tree import speedup_text

        self._take(values)
        best = f"{speedup_text(self.best[1], self.best[2])} ({self.named(self.best[0])})" if self.best else \
            "none faster yet"
        gpu = f" | GPU {self.gpu_s:.0f} s" if self.on_gpu else ""
        for event in values.get("events") or []:
            self.console.print(f"[bold cyan]{node:>11}[/] {escape(self.named(without_node(node, event)))}  [dim]| "
                               f"best {best} | {self.judged}/{self.max_iters} judged | ${self.usd:.3f}{gpu}[/]",
                               soft_wrap=True, highlight=False)

    def named(self, text: str) -> str:
        """``text`` with each candidate's id followed by its name, the first time the id appears."""
        for variant_id, name in self.names.items():
            text = re.sub(rf"(?<![\w-]){re.escape(variant_id)}(?![\w-])", f"{variant_id} ({name})", text, count=1)
        return text


def variant_name(variant: Any) -> str:
    """A candidate's short name: its recipe's, or its idea's title (an idea reads "title: description")."""
    if variant.kind == "reference":
        return ""
    if variant.origin.startswith("recipe:"):
        return variant.origin.removeprefix("recipe:")
    title = variant.idea.split(": ", 1)[0].strip()
    return title if len(title) <= 48 else title[:47].rstrip() + "…"


def without_node(node: str, event: str) -> str:
    """The event without its leading node name (``plan from ...`` under ``plan`` reads ``from ...``): the line's
    first column names the node already."""
    head, _, rest = event.partition(" ")
    if head.rstrip(":") != node or not rest:
        return event
    return rest


def editor_in_use() -> str | None:
    """The user's editor ($VISUAL, then $EDITOR), which edits are offered in when set."""
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or None


def _prompt(text: str, **kwargs: Any) -> str:
    """``typer.prompt``, with Ctrl-C or the end of input as the KeyboardInterrupt the run stops cleanly on (typer
    turns both into ``Abort``, which would otherwise end the run as a failure)."""
    try:
        return str(typer.prompt(text, **kwargs))
    except typer.Abort:
        raise KeyboardInterrupt from None


def _in_editor(editor: str, text: str, suffix: str) -> str | None:
    """The text after the user edited it in ``editor`` (a command line, as $EDITOR holds it); None when nothing
    changed or the editor failed."""
    with tempfile.TemporaryDirectory(prefix="kernelpro-edit-") as folder:
        path = Path(folder) / f"edit{suffix}"
        path.write_text(text)
        try:
            done = subprocess.run([*shlex.split(editor), str(path)], check=False)
        except (OSError, ValueError) as error:
            typer.echo(f"the editor {editor!r} could not start ({error}); choose another answer", err=True)
            return None
        if done.returncode != 0:
            typer.echo(f"the editor {editor!r} exited with status {done.returncode}; nothing was taken", err=True)
            return None
        edited = path.read_text()
    return edited if edited.strip() and edited != text else None


def _edited_candidate(console: Console, source: str, editor: str | None) -> dict[str, Any] | None:
    if editor:
        edited = _in_editor(editor, source, ".py")
        if edited is None:
            console.print("nothing changed; the candidate stays as it was")
            return None
        return _took(console, edited, f"your editor ({editor})")
    while True:
        answer = _prompt("file with the edited candidate (empty: back)", default="", show_default=False).strip()
        if not answer:
            return None
        path = Path(answer).expanduser()
        try:
            edited = path.read_text()
        except (OSError, UnicodeDecodeError) as error:  # a typo costs one question, never the run
            reason = "it is a directory" if path.is_dir() else "no such file" if not path.exists() else \
                f"{type(error).__name__}: {error}"
            console.print(f"[red]cannot read {escape(str(path))}:[/] {escape(reason)}; give another path",
                          soft_wrap=True)
            continue
        if not edited.strip():
            console.print(f"[red]{escape(str(path))} is empty;[/] give another path", soft_wrap=True)
            continue
        return _took(console, edited, str(path))


def _took(console: Console, source: str, where: str) -> dict[str, Any]:
    """The edit as the answer, confirmed: the code judged is this one (kept in the run, judged on --resume)."""
    console.print(f"took your edit: {len(source.splitlines())} lines from {escape(where)}", soft_wrap=True)
    return {"action": "edit", "source": source}


def _edited_plan(console: Console, ideas: list[dict[str, Any]], editor: str | None) -> dict[str, Any] | None:
    if editor:
        current = "\n".join(f"{i['title']}: {i.get('description', '')}" for i in ideas)
        edited = _in_editor(editor, f"# One idea a line, replacing the plan (lines starting with # are ignored).\n"
                                    f"{current}\n", ".txt")
        lines = [line.strip() for line in (edited or "").splitlines() if line.strip() and not line.startswith("#")]
        if not lines:
            console.print("nothing changed; the plan stays as it was")
            return None
        return {"action": "edit", "ideas": [{"title": line[:80], "description": line} for line in lines]}
    idea = _prompt("your idea (replaces the plan; empty: back)", default="", show_default=False).strip()
    return {"action": "edit", "ideas": [{"title": idea[:80], "description": idea}]} if idea else None


def ask_user(console: Console, request: dict[str, Any], editor: str | None = None) -> dict[str, Any]:
    """Answer an interrupt at the terminal: approve, edit (in ``editor`` when one is set), skip or stop.

    An answer that cannot be used (an unknown letter, a path that cannot be read, an edit that changes nothing, a
    plan edit where no model can write it) asks again; Ctrl-C raises KeyboardInterrupt (the run stops, resumable).
    """
    plan = request.get("kind") == "plan"
    if plan:
        console.rule(f"plan for {request['variant']}")
        for i, idea in enumerate(request["ideas"], 1):
            console.print(f"{i}. [bold]{escape(idea['title'])}[/] {escape(idea.get('description', ''))}",
                          soft_wrap=True)
    else:
        console.rule(f"candidate {request['variant']}: {request.get('idea', '')[:80]}")
        console.print(request["source"], markup=False, highlight=False)
    if request.get("notice"):
        console.print(f"[yellow]{escape(request['notice'])}[/]", soft_wrap=True)
    where = f" in {editor}" if editor else ""
    while True:
        choice = _prompt(f"[a]pprove, [e]dit{where}, [s]kip, s[t]op", default="a").strip().lower()[:1]
        if choice == "a":
            return {"action": "approve"}
        if choice == "s":
            return {"action": "skip"}
        if choice == "t":
            return {"action": "stop"}
        if choice != "e":
            console.print("answer a, e, s or t")
            continue
        if plan and request.get("editable") is False:
            console.print(f"[yellow]cannot edit this plan: {escape(request.get('not_editable', ''))}[/]",
                          soft_wrap=True)
            continue
        edited = _edited_plan(console, request["ideas"], editor) if plan else \
            _edited_candidate(console, request["source"], editor)
        if edited is not None:
            return edited
