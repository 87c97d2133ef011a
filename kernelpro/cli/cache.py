"""`kernelpro cache [show]` and `kernelpro cache clear`: what kernelpro keeps across runs, where, and how much.

Each cache is entries in two-hex-digit folders under its directory (``<key[:2]>/...``): the compile baselines'
verdicts (``cache.root``'s ``baselines/``), compiled NVRTC and nvcc kernels (``compile.cache_dir``) and built
load_inline extensions (``compile.inline_cache_dir``, with its build staging). Clearing removes those folders
and nothing else beside them (the load_inline build locks stay, for builders holding them), so a directory set by
mistake to one that holds other files loses none of them; a directory that is the file system's root, HOME or
one holding HOME is refused. It asks for no confirmation: it only deletes what can be made again.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelpro.cli.errors import fail
from kernelpro.config import Settings, load_settings

ENTRY_FOLDER = re.compile(r"[0-9a-f]{2}")
JsonOption = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")]
cache_app = typer.Typer(help="kernelpro's caches (the baselines' verdicts, compiled kernels, load_inline "
                             "extensions): where, how many entries, how big; clear them.")


@dataclass(frozen=True)
class Cache:
    name: str
    path: Path
    entries_are_dirs: bool = False
    extra: tuple[str, ...] = ()
    """Folders beside the entries that are the cache's own and cleared with it (a build's staging)."""

    def entry_folders(self) -> list[Path]:
        if not self.path.is_dir():
            return []
        return sorted(p for p in self.path.iterdir()
                      if p.is_dir() and not p.is_symlink() and ENTRY_FOLDER.fullmatch(p.name))

    def entries(self) -> int:
        return sum(1 for folder in self.entry_folders() for item in folder.iterdir()
                   if not item.name.startswith(".") and (item.is_dir() if self.entries_are_dirs else item.is_file()))

    def owned(self) -> list[Path]:
        return [*self.entry_folders(), *(p for p in (self.path / name for name in self.extra) if p.is_dir())]

    def size(self) -> int:
        return sum(f.stat().st_size for folder in self.owned() for f in folder.rglob("*")
                   if f.is_file() and not f.is_symlink())

    def describe(self) -> dict:
        return {"name": self.name, "path": str(self.path), "entries": self.entries(), "bytes": self.size()}


def caches(settings: Settings) -> list[Cache]:
    return [Cache("baselines", settings.cache.baselines_dir),
            Cache("compile", settings.compile.cache_dir.expanduser()),
            Cache("inline", settings.compile.inline_cache_dir.expanduser(), entries_are_dirs=True,
                  extra=(".staging",))]


def refusal(path: Path) -> str | None:
    """Why a cache directory must not be cleared (the root, HOME, a directory holding HOME), or None."""
    resolved, home = path.resolve(), Path.home().resolve()
    if resolved == Path(resolved.anchor) or resolved == home or home.is_relative_to(resolved):
        return f"{path} is the file system's root, HOME or a directory holding HOME: not cleared"
    return None


def clear(cache: Cache) -> dict:
    """Remove the cache's entries; what it held before."""
    held = cache.describe()
    for folder in cache.owned():
        shutil.rmtree(folder)
    return held


def size_text(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _table(rows: list[dict], title: str) -> Table:
    table = Table(title=title)
    for column in ("cache", "path", "entries", "size"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["name"], escape(row["path"]), str(row["entries"]), size_text(row["bytes"]))
    return table


def show(as_json: bool) -> None:
    settings = load_settings()
    rows = [cache.describe() for cache in caches(settings)]
    if as_json:
        typer.echo(json.dumps({"root": str(settings.cache.root.expanduser()), "caches": rows}))
        return
    Console().print(_table(rows, f"kernelpro's caches (root {escape(str(settings.cache.root.expanduser()))})"))


@cache_app.callback(invoke_without_command=True)
def cache_main(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Each cache's path, entries and size (the same as `kernelpro cache show`)."""
    if ctx.invoked_subcommand is None:
        show(as_json)


@cache_app.command("show")
def cache_show(as_json: JsonOption = False) -> None:
    """Each cache's path, entries and size."""
    show(as_json)


@cache_app.command("clear")
def cache_clear(
    baselines: Annotated[bool, typer.Option("--baselines", help="The compile baselines' verdicts.")] = False,
    compiled: Annotated[bool, typer.Option("--compile", help="Compiled NVRTC and nvcc kernels.")] = False,
    inline: Annotated[bool, typer.Option("--inline", help="Built load_inline extensions.")] = False,
    everything: Annotated[bool, typer.Option("--all", help="Every cache (the default when none is named).")]
    = False,
    as_json: JsonOption = False,
) -> None:
    """Delete the named caches' entries (every cache when none is named); they are made again when needed."""
    chosen = {"baselines": baselines, "compile": compiled, "inline": inline}
    wanted = [c for c in caches(load_settings()) if everything or chosen[c.name] or not any(chosen.values())]
    if refused := [why for cache in wanted if (why := refusal(cache.path))]:
        fail("; ".join(refused))
    cleared = [clear(cache) for cache in wanted]
    if as_json:
        typer.echo(json.dumps({"cleared": cleared}))
        return
    out = Console()
    for row in cleared:
        out.print(f"cleared {row['name']}: {row['entries']} entries, {size_text(row['bytes'])} "
                  f"({escape(row['path'])})", soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")
