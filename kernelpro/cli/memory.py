"""`kernelpro memory ...`: search, show, export, import and forget records of the search memory."""

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

from kernelpro.cli.errors import fail as _fail
from kernelpro.config import load_settings

if TYPE_CHECKING:
    from kernelpro.memory import MemoryStore, Record

console = Console()
memory_app = typer.Typer(help="The search memory: lessons from every attempt, kept across runs.",
                         no_args_is_help=True)
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
    if file.is_dir():
        _fail(f"{file}: a directory; give the file to write")
    if not file.parent.is_dir():
        _fail(f"{file.parent}: no such directory to write {file.name} in")
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
    if file.is_dir():
        _fail(f"{file}: a directory, not a JSON Lines file")
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


def register(app: typer.Typer) -> None:
    app.add_typer(memory_app, name="memory")
