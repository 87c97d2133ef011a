"""The ``kernelpro`` command. The only module that prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelpro.config import load_settings
from kernelpro.harness.result import EvalResult
from kernelpro.problem import ProblemError, load_problem

app = typer.Typer(help="kernelpro: make GPU kernels faster, with a judge you can trust.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
console = Console()
errors = Console(stderr=True)

STATUS_STYLE = {"ok": "bold green", "incorrect": "bold red", "rejected": "bold magenta",
                "compile_error": "bold yellow", "runtime_error": "bold red", "timeout": "bold yellow"}
DeviceOption = Annotated[str, typer.Option("--device", help="cpu, cuda, or auto (cuda when a GPU is visible).")]


def _fail(message: str) -> None:
    errors.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code=2)


@app.command("eval")
def eval_command(
    reference: Annotated[Path, typer.Argument(help="KernelBench-format problem: Model, get_inputs, get_init_inputs.")],
    candidate: Annotated[Path, typer.Argument(help="Python file defining ModelNew.")],
    device: DeviceOption = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")] = False,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="Check correctness and guards only.")] = False,
    timeout: Annotated[Optional[float], typer.Option(help="Wall-time limit for the candidate, seconds.")] = None,
) -> None:
    """Judge one candidate: correct on fresh random inputs, timed honestly, guarded against reward hacks.

    Exits 0 whenever the judge worked, whatever the verdict; 2 when the inputs could not be judged.
    """
    from kernelpro.harness.judge import judge

    settings = load_settings()
    if timeout is not None:
        settings.harness.timeout_s = timeout
    try:
        problem = load_problem(reference)
    except ProblemError as exc:
        _fail(str(exc))
    if not candidate.is_file():
        _fail(f"{candidate}: no such file")
    source = candidate.read_bytes().decode("utf-8", errors="replace")
    result = judge(problem, source, device=device, settings=settings, timing=not no_timing)
    if as_json:
        typer.echo(json.dumps(result.to_json_dict()))
    else:
        _print_verdict(result, problem.name, candidate.name)
    if result.reason == "reference_failed":
        raise typer.Exit(code=2)


def _print_verdict(result: EvalResult, problem: str, candidate: str) -> None:
    style = STATUS_STYLE.get(result.status, "bold")
    reason = f" ({result.reason})" if result.reason else ""
    console.print(f"[{style}]{result.status}[/]{reason}  {candidate} on {problem}, device {result.device}")
    console.print(result.message, markup=False, highlight=False)
    if result.candidate and result.reference:
        table = Table(show_edge=False, box=None, padding=(0, 2))
        for column in ("", "median ms", "p10", "p90", "spread", "trials"):
            table.add_column(column, justify="right")
        for name, timing in (("reference", result.reference), ("candidate", result.candidate)):
            table.add_row(name, f"{timing.median_ms:.4g}", f"{timing.p10_ms:.4g}", f"{timing.p90_ms:.4g}",
                          f"{timing.spread:.1%}", str(timing.trials))
        console.print(table)
        console.print(f"speedup [bold]{result.speedup:.3f}x[/]  ({result.candidate.method})")
    for finding in result.guards:
        console.print(f"  [{'red' if finding.severity == 'reject' else 'yellow'}]{finding.severity}[/] "
                      f"{finding.reason} ({finding.source}): {finding.message}", highlight=False)
    if result.worker_output and result.status not in ("ok", "incorrect"):
        console.print("[dim]last output of the candidate:[/]")
        console.print(result.worker_output[-2000:], markup=False, highlight=False)


@app.command()
def doctor() -> None:
    """Report what this machine has: GPUs, CUDA tools, Nsight Compute, Triton, torch, the LLM provider."""
    from kernelpro.environment import probe_environment

    checks = probe_environment(load_settings())
    table = Table(title="kernelpro doctor", show_lines=False)
    table.add_column("check")
    table.add_column("")
    table.add_column("detail", overflow="fold")
    for check in checks:
        mark = "[green]ok[/]" if check.ok else ("[red]missing[/]" if check.required else "[yellow]no[/]")
        table.add_row(check.name, mark, escape(check.detail))
    console.print(table)
    if any(c.required and not c.ok for c in checks):
        raise typer.Exit(code=1)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
