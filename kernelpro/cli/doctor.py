"""`kernelpro doctor`: what this machine has, and which sandbox walls it gives."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

import kernelpro
from kernelpro.config import load_settings
from kernelpro.exit_codes import FAILED

console = Console()


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object: every check, and whether all "
                                                         "required ones passed.")] = False,
) -> None:
    """Report what this machine has: GPUs, CUDA tools, Nsight Compute, Triton, torch, the LLM provider, and which
    walls the sandbox gets here (tried in a worker-like process). Exits 4 when something required is missing."""
    from kernelpro.environment import probe_environment
    from kernelpro.harness.isolation.probe import isolation_checks
    from kernelpro.harness.jobs import protected_paths

    settings = load_settings()
    checks = probe_environment(settings) + isolation_checks(protected_paths(settings))
    usable = not any(c.required and not c.ok for c in checks)
    if as_json:
        typer.echo(json.dumps({"kernelpro": kernelpro.__version__, "ok": usable,
                               "checks": [asdict(check) for check in checks]}))
    else:
        table = Table(title="kernelpro doctor", show_lines=False)
        table.add_column("check")
        table.add_column("")
        table.add_column("detail", overflow="fold")
        for check in checks:
            mark = "[green]ok[/]" if check.ok else ("[red]missing[/]" if check.required else "[yellow]no[/]")
            table.add_row(check.name, mark, escape(check.detail))
        console.print(table)
    if not usable:
        raise typer.Exit(code=FAILED)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
