"""The ``kernelpro`` command. The only module that prints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelpro.cli_errors import fail as _fail
from kernelpro.config import load_settings
from kernelpro.harness.result import EvalResult
from kernelpro.harness.stats import speedup_text
from kernelpro.problem import ProblemError, load_problem

if TYPE_CHECKING:
    from kernelpro.memory import MemoryStore, Record

app = typer.Typer(help="kernelpro: make GPU kernels faster, with a judge you can trust.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
console = Console()

STATUS_STYLE = {"ok": "bold green", "incorrect": "bold red", "rejected": "bold magenta",
                "compile_error": "bold yellow", "runtime_error": "bold red", "timeout": "bold yellow"}
DeviceOption = Annotated[str, typer.Option("--device", help="cpu, cuda, or auto (cuda when a GPU is visible).")]


@app.command("eval")
def eval_command(
    reference: Annotated[Path, typer.Argument(help="KernelBench-format problem: Model, get_inputs, get_init_inputs.")],
    candidates: Annotated[list[Path], typer.Argument(help="Python file(s) defining ModelNew.")],
    device: DeviceOption = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")] = False,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="Check correctness and guards only.")] = False,
    timeout: Annotated[Optional[float], typer.Option(help="Wall-time limit per candidate, seconds.")] = None,
) -> None:
    """Judge candidates: correct on fresh random inputs, timed honestly, guarded against reward hacks.

    Several candidates of one problem go through the pipeline: CUDA kernels compiled ahead in a CPU pool, then one
    worker per GPU (long-lived by default; harness.worker_mode = "fresh" for a new process per candidate).
    With one candidate --json prints its verdict; with several, {"problem": ..., "results": [...]}.
    Exits 0 whenever the judge worked, whatever the verdicts; 2 when the inputs could not be judged.
    """
    from kernelpro.harness.judge import judge_many

    settings = load_settings()
    if timeout is not None:
        settings.harness.timeout_s = timeout
    try:
        problem = load_problem(reference)
    except ProblemError as exc:
        _fail(str(exc))
    for path in candidates:
        if not path.is_file():
            _fail(f"{path}: no such file")
    sources = [path.read_bytes().decode("utf-8", errors="replace") for path in candidates]
    results = judge_many(problem, sources, device=device, settings=settings, timing=not no_timing)
    if as_json:
        rows = [{"candidate_file": str(path), **result.to_json_dict()}
                for path, result in zip(candidates, results, strict=True)]
        typer.echo(json.dumps(rows[0] if len(rows) == 1 else {"problem": problem.name, "results": rows}))
    elif len(results) == 1:
        _print_verdict(results[0], problem.name, candidates[0].name, settings.harness.min_effect)
    else:
        _print_batch(results, problem.name, candidates)
    if any(result.reason == "reference_failed" for result in results):
        raise typer.Exit(code=2)


def _print_batch(results: list[EvalResult], problem: str, candidates: list[Path]) -> None:
    console.print(f"[bold]{len(results)} candidates for {problem}[/], device {results[0].device}")
    width = max(len(path.name) for path in candidates)
    for path, result in zip(candidates, results, strict=True):
        style = STATUS_STYLE.get(result.status, "bold")
        timing = (f"  {speedup_text(result.speedup, result.speedup_ci95)} {result.speed_verdict or ''} "
                  f"({result.candidate_ms:.4g} ms vs {result.reference_ms:.4g} ms)" if result.speedup else "")
        reason = f" ({result.reason})" if result.reason else ""
        console.print(f"{path.name:<{width}}  [{style}]{result.status}[/]{reason}{timing}{_problem_tag(result)}",
                      soft_wrap=True, highlight=False)


def _problem_tag(result: EvalResult) -> str:
    """What is wrong with the problem itself, beside the verdict: ``  [problem: constant_output]``."""
    reasons = ", ".join(f.reason for f in result.problem_findings)
    return f"  [bold magenta]\\[problem: {reasons}][/]" if reasons else ""


def _print_verdict(result: EvalResult, problem: str, candidate: str, min_effect: float) -> None:
    style = STATUS_STYLE.get(result.status, "bold")
    reason = f" ({result.reason})" if result.reason else ""
    console.print(f"[{style}]{result.status}[/]{reason}  {candidate} on {problem}, device {result.device}"
                  f"{_problem_tag(result)}", soft_wrap=True)
    console.print(result.message, markup=False, highlight=False)
    if result.candidate and result.reference:
        table = Table(show_edge=False, box=None, padding=(0, 2))
        for column in ("", "median ms", "p10", "p90", "spread", "trials"):
            table.add_column(column, justify="right")
        for name, timing in (("reference", result.reference), ("candidate", result.candidate)):
            table.add_row(name, f"{timing.median_ms:.4g}", f"{timing.p10_ms:.4g}", f"{timing.p90_ms:.4g}",
                          f"{timing.spread:.1%}", str(timing.trials))
        console.print(table)
        console.print(f"speedup [bold]{speedup_text(result.speedup, result.speedup_ci95)}[/] (95% interval): "
                      f"[bold]{result.speed_verdict}[/] at a minimum effect of "
                      f"{min_effect:.0%}  ({result.candidate.method})", highlight=False)
        notes = [("host-bound: the reference's launches cost more than its GPU time, so a speedup here is a "
                  "launch-overhead saving") if result.host_bound else "",
                 "timed on a busy machine: not a speedup to act on" if result.contended else ""]
        for note in filter(None, notes):
            console.print(f"  [yellow]{note}[/]", highlight=False)
    for finding in result.guards:
        console.print(f"  [{'red' if finding.severity == 'reject' else 'yellow'}]{finding.severity}[/] "
                      f"{finding.reason} ({finding.source}): {finding.message}", highlight=False)
    for found in result.problem_findings:
        console.print(f"  [magenta]problem[/] {found.reason}: {found.message}", highlight=False)
    if result.worker_output and result.status not in ("ok", "incorrect"):
        console.print("[dim]last output of the candidate:[/]")
        console.print(result.worker_output[-2000:], markup=False, highlight=False)


@app.command()
def doctor() -> None:
    """Report what this machine has: GPUs, CUDA tools, Nsight Compute, Triton, torch, the LLM provider, and which
    walls the sandbox gets here (tried in a worker-like process)."""
    from kernelpro.environment import probe_environment
    from kernelpro.harness.isolation_probe import isolation_checks

    checks = probe_environment(load_settings()) + isolation_checks()
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


memory_app = typer.Typer(help="The search memory: lessons from every attempt, kept across runs.",
                         no_args_is_help=True)
app.add_typer(memory_app, name="memory")
StorePathOption = Annotated[Optional[Path], typer.Option("--path", help="Store directory (default: memory.path).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")]


@contextmanager
def _memory_errors() -> Iterator[None]:
    from kernelpro.memory import MemoryStoreError

    try:
        yield
    except MemoryStoreError as exc:
        _fail(str(exc))


def _memory_store(path: Optional[Path], must_exist: bool = False) -> MemoryStore:
    from kernelpro.memory import MemoryStore

    settings = load_settings().memory
    if path is not None:
        settings = settings.model_copy(update={"path": path})
    if must_exist and not settings.path.expanduser().is_dir():
        _fail(f"no memory store at {settings.path}")
    with _memory_errors():
        store = MemoryStore(settings)
    return store


def _record_json(record: Record) -> dict:
    return {"id": record.id, **record.model_dump(mode="json")}


@memory_app.command("search")
def memory_search(
    query: Annotated[str, typer.Argument(help="What to look for, in words.")],
    problem: Annotated[Optional[str], typer.Option("--problem", help="Only records of this problem name.")] = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", help="Only records from this GPU.")] = None,
    kind: Annotated[Optional[str], typer.Option("--kind", help="attempt, insight or compile_fix.")] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="How many records at most.")] = 10,
    path: StorePathOption = None,
    as_json: JsonOption = False,
) -> None:
    """Find the records most similar to QUERY."""
    from kernelpro.memory import KINDS, MemoryFilter

    if kind is not None and kind not in KINDS:
        _fail(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}")
    store = _memory_store(path, must_exist=True)
    with _memory_errors():
        hits = store.search(query, MemoryFilter(problem=problem, gpu=gpu, kind=kind), k=k)
    if as_json:
        results = [{"score": round(h.score, 4), **_record_json(h.record)} for h in hits]
        typer.echo(json.dumps({"query": query, "results": results}))
        return
    if not hits:
        console.print(f"no records in {escape(str(store.path))} match", highlight=False, soft_wrap=True)
        return
    table = Table(title=f"memory search: {escape(query)}", show_lines=False)
    for column in ("score", "kind", "run", "lesson"):
        table.add_column(column, overflow="fold", justify="right" if column == "score" else "left")
    for hit in hits:
        table.add_row(f"{hit.score:.3f}", hit.record.kind, escape(getattr(hit.record, "run_id", None) or "-"),
                      escape(hit.record.summary()))
    console.print(table)


@memory_app.command("show")
def memory_show(
    limit: Annotated[int, typer.Option("--limit", min=0, help="How many of the newest records to list.")] = 20,
    path: StorePathOption = None,
    as_json: JsonOption = False,
) -> None:
    """Counts by kind and the newest records."""
    store = _memory_store(path, must_exist=True)
    with _memory_errors():
        overview = store.overview(limit)
    if as_json:
        typer.echo(json.dumps({"path": str(overview.path), "embedding_model": overview.embedding_model,
                               "total": overview.total, "counts": overview.counts,
                               "recent": [_record_json(r) for r in overview.recent]}))
        return
    counts = ", ".join(f"{n} {kind}" for kind, n in overview.counts.items())
    console.print(f"[bold]{overview.total}[/] records in {escape(str(overview.path))} ({counts})", highlight=False,
                  soft_wrap=True)
    if overview.recent:
        table = Table(show_lines=False)
        for column in ("written", "kind", "run", "lesson"):
            table.add_column(column, overflow="fold")
        for record in overview.recent:
            table.add_row(record.created_at.strftime("%Y-%m-%d %H:%M"), record.kind,
                          escape(getattr(record, "run_id", None) or "-"), escape(record.summary()))
        console.print(table)


@memory_app.command("export")
def memory_export(
    file: Annotated[Path, typer.Argument(help="JSON Lines file to write, one record a line.")],
    path: StorePathOption = None,
) -> None:
    """Write every record to FILE."""
    store = _memory_store(path, must_exist=True)
    with _memory_errors():
        count = store.export_jsonl(file)
    console.print(f"exported [bold]{count}[/] records to {escape(str(file))}", highlight=False, soft_wrap=True)


@memory_app.command("import")
def memory_import(
    file: Annotated[Path, typer.Argument(help="JSON Lines file written by export.")],
    path: StorePathOption = None,
) -> None:
    """Add the records in FILE; records already present are skipped."""
    if not file.is_file():
        _fail(f"{file}: no such file")
    store = _memory_store(path)
    with _memory_errors():
        summary = store.import_jsonl(file)
    console.print(f"imported [bold]{summary.added}[/] new records ({summary.already_present} already present)",
                  highlight=False, soft_wrap=True)


@memory_app.command("forget")
def memory_forget(
    run: Annotated[str, typer.Option("--run", help="The run whose records are deleted.")],
    path: StorePathOption = None,
) -> None:
    """Delete every record written by one run."""
    store = _memory_store(path, must_exist=True)
    with _memory_errors():
        count = store.forget(run)
    console.print(f"forgot [bold]{count}[/] records of run {escape(run)}", highlight=False, soft_wrap=True)


def _register_commands() -> None:
    from kernelpro import cli_optimize, cli_profile

    cli_profile.register(app)
    cli_optimize.register(app)


_register_commands()


def main() -> None:
    from kernelpro.harness.isolation import hide_this_process

    hide_this_process()  # it may hold a provider's key: no other process of this user may read its memory
    app()


if __name__ == "__main__":
    main()
