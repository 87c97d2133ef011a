"""What `kernelpro optimize` shows and asks at the terminal: one line per step, and the answers to interrupts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape


class Progress:
    """One line per step on the terminal: the node, what happened, best speedup so far, spend."""

    def __init__(self, console: Console, max_iters: int) -> None:
        self.console, self.max_iters = console, max_iters
        self.best: tuple[str, float, list[float] | None] | None = None  # id, speedup, its interval
        self.judged, self.usd, self.gpu_s = 0, 0.0, 0.0

    def update(self, node: str, values: dict[str, Any]) -> None:
        if not isinstance(values, dict):
            return
        from kernelpro.search.tree import Variant, speedup_text

        for data in (values.get("variants") or {}).values():
            variant = Variant.model_validate(data)
            if variant.improves and (self.best is None or (variant.deciding_speedup or 0.0) > self.best[1]):
                self.best = (variant.id, variant.deciding_speedup or 0.0, variant.speedup_ci95)
        self.judged = values.get("iteration", self.judged)
        self.gpu_s += values.get("gpu_s", 0.0) or 0.0
        if values.get("usage"):
            self.usd = values["usage"].get("total", {}).get("cost_usd", self.usd)
        best = f"{speedup_text(self.best[1], self.best[2])} ({self.best[0]})" if self.best else "none faster yet"
        for event in values.get("events") or []:
            self.console.print(f"[bold cyan]{node:>11}[/] {escape(event)}  [dim]| best {best} | "
                               f"{self.judged}/{self.max_iters} judged | ${self.usd:.3f} | GPU {self.gpu_s:.0f} s[/]",
                               soft_wrap=True, highlight=False)


def ask_user(console: Console, request: dict[str, Any]) -> dict[str, Any]:
    """Answer an interrupt at the terminal: approve, edit, skip or stop."""
    if request.get("kind") == "plan":
        console.rule(f"plan for {request['variant']}")
        for i, idea in enumerate(request["ideas"], 1):
            console.print(f"{i}. [bold]{escape(idea['title'])}[/] {escape(idea.get('description', ''))}",
                          soft_wrap=True)
    else:
        console.rule(f"candidate {request['variant']}: {request.get('idea', '')[:80]}")
        console.print(request["source"], markup=False, highlight=False)
    choice = typer.prompt("[a]pprove, [e]dit, [s]kip, s[t]op", default="a").strip().lower()[:1]
    if choice == "t":
        return {"action": "stop"}
    if choice == "s":
        return {"action": "skip"}
    if choice == "e":
        if request.get("kind") == "plan":
            idea = typer.prompt("your idea (replaces the plan)")
            return {"action": "edit", "ideas": [{"title": idea[:80], "description": idea}]}
        path = Path(typer.prompt("file with the edited candidate"))
        return {"action": "edit", "source": path.read_text()}
    return {"action": "approve"}
