"""How every command reports input it cannot work with: one red line on stderr, exit code 2 (``BAD_INPUT``)."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from kernelpro.exit_codes import BAD_INPUT

errors = Console(stderr=True)


def fail(message: str, code: int = BAD_INPUT) -> NoReturn:
    errors.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code=code)
