"""How every command reports input it cannot work with: one red line on stderr, exit code 2."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape

errors = Console(stderr=True)


def fail(message: str) -> None:
    errors.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code=2)
