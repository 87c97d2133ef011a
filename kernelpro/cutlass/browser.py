"""The CUTLASS/CuTe source browser: definitions, usages, search, directory listings, file reads, examples.

Every operation returns a result with ``render()``; nothing here prints. Bad paths raise CutlassPathError;
a symbol or topic that matches nothing returns an empty result whose message says what to try instead.
"""

from __future__ import annotations

import re

from kernelpro.config import CutlassSettings
from kernelpro.cutlass import index as index_module
from kernelpro.cutlass.examples import ExampleFinder
from kernelpro.cutlass.index import CutlassIndex, IndexStats
from kernelpro.cutlass.results import (
    Definition,
    DefinitionResult,
    DirEntry,
    DirListing,
    ExamplesResult,
    FileSlice,
    SearchResult,
    UsageResult,
)
from kernelpro.cutlass.sources import CutlassPathError, SourceTree, locate, normalize
from kernelpro.cutlass.symbols import SymbolEntry
from kernelpro.cutlass.textsearch import TextSearch, area_rank

MAX_READ_LINES = 120
SNIPPETS = 3
"""Definitions shown with their declaration; further ones are listed by location."""
MAX_SNIPPET_LINES = 24
EXAMPLE_LIMIT = 8
# Where "#include <cute/...>"-style paths live, for read_file("cute/layout.hpp").
INCLUDE_ROOTS = ("include/", "tools/util/include/")
_KIND_RANK = {"struct": 0, "class": 0, "union": 0, "enum": 0, "def": 0, "function": 1, "alias": 2, "typedef": 2,
              "macro": 2, "variable": 3}
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_DECLARATION_END = re.compile(r"\{(?!\s*\})|;")  # a body or a ";", not the "{}" of a default argument


def _mismatch(e: SymbolEntry, qualifiers: list[str]) -> int:
    """0 when the definition's namespace and classes end with the query's qualifiers, up to 3 for no overlap."""
    if not qualifiers:
        return 0
    scope = [part for part in re.split(r"::|\.", f"{e.namespace}::{e.parent}") if part]
    if scope[-len(qualifiers):] == qualifiers:
        return 0
    if all(q in scope for q in qualifiers):
        return 1
    return 2 if any(q in scope for q in qualifiers) else 3


def _ends_head(line: str, kind: str, python: bool) -> bool:
    """Whether a declaration's head ends on this line (so the snippet can stop)."""
    if kind == "macro":
        return not line.rstrip().endswith("\\")
    if python:
        return kind == "variable" or line.rstrip().endswith(":")
    return _DECLARATION_END.search(line) is not None


def split_qualified(symbol: str) -> list[str]:
    """``cute::Layout<Shape>`` -> ``["cute", "Layout"]``; ``cute.make_tiled_copy()`` -> ``["cute", ...]``."""
    text = symbol.strip().removesuffix("()")
    while _TEMPLATE_ARGS.search(text):
        text = _TEMPLATE_ARGS.sub("", text)
    return [part for part in re.split(r"::|\.", text.strip()) if _IDENTIFIER.fullmatch(part.strip())]


class CutlassBrowser:
    """Browse one CUTLASS tree (the wheel's copy by default); the index is built once per tree and cached."""

    def __init__(self, settings: CutlassSettings | None = None) -> None:
        self.settings = settings or CutlassSettings()
        self.tree: SourceTree = locate(self.settings)
        self.index: CutlassIndex = index_module.open_index(self.tree, self.settings.index_dir)
        self._text = TextSearch(self.index)
        self._examples = ExampleFinder(self.index)

    @property
    def stats(self) -> IndexStats:
        """Index size and how long building or loading it took."""
        return self.index.stats

    def describe(self) -> str:
        """One line: which CUTLASS this is and what is in it."""
        s = self.stats
        return (f"CUTLASS {self.tree.version} ({self.tree.origin}): {s.files} files, {s.symbols} definitions; "
                f"top-level: {self.tree.top_level()}")

    def _limit(self, limit: int | None) -> int:
        cap = max(1, self.settings.max_results)
        return cap if limit is None else max(1, min(limit, cap))

    def search(self, query: str, regex: bool = False, path_glob: str | None = None,
               limit: int | None = None) -> SearchResult:
        """Lines matching ``query``: all its words within a few lines (case-insensitive), or a regex.

        ``path_glob`` narrows the files, e.g. ``include/cute/atom/*`` or ``*sm90*`` or a directory.
        """
        return self._text.search(query, regex, path_glob, self._limit(limit))

    def find_definition(self, symbol: str, limit: int | None = None) -> DefinitionResult:
        """Where a class, struct, function, alias or macro is defined, best match first.

        Qualified names (``cute::make_tiled_copy``, ``cutlass::gemm::collective::CollectiveMma``) match on the
        last component and prefer definitions in the matching namespace.
        """
        parts = split_qualified(symbol)
        if not parts:
            return DefinitionResult(symbol, (), 0, f"{symbol!r} is not a C++ or Python name.")
        name, qualifiers = parts[-1], parts[:-1]
        symbols = self.index.symbols
        entries = symbols.named(name)
        message = ""
        if not entries:
            folded = sorted(n for n in symbols.by_name if n.lower() == name.lower())
            if not folded:
                return DefinitionResult(symbol, (), 0, self._not_found(symbol, name))
            entries = [e for n in folded for e in symbols.named(n)]
            message = f"no exact match; matched {', '.join(folded)} ignoring case"
        entries.sort(key=lambda e: self._rank(e, qualifiers))
        shown = entries[: self._limit(limit)]
        # Declarations for the best few; function-local aliases only when nothing better exists.
        with_snippet = [i for i, e in enumerate(shown) if i == 0 or e.scope != "local"][:SNIPPETS]
        definitions = tuple(self._definition(e, i in with_snippet) for i, e in enumerate(shown))
        return DefinitionResult(symbol, definitions, len(entries), message)

    def find_usages(self, symbol: str, limit: int | None = None) -> UsageResult:
        """Whole-word uses of a symbol (its last component), outside its definitions, grouped by file."""
        parts = split_qualified(symbol)
        if not parts:
            return UsageResult(symbol, (), 0, 0, f"{symbol!r} is not a C++ or Python name.")
        return self._text.usages(parts[-1], self._limit(limit))

    def list_dir(self, path: str = "") -> DirListing:
        """Entries of a directory of the tree (``""`` is the top): sub-directories with file counts, file sizes."""
        rel = normalize(path)
        prefix = rel + "/" if rel else ""
        dirs: dict[str, list[int]] = {}
        files: list[DirEntry] = []
        for fid, file_path in enumerate(self.index.paths):
            if not file_path.startswith(prefix):
                continue
            head, sep, _ = file_path[len(prefix):].partition("/")
            if sep:
                count_size = dirs.setdefault(head, [0, 0])
                count_size[0] += 1
                count_size[1] += self.index.sizes[fid]
            else:
                files.append(DirEntry(head, False, self.index.sizes[fid]))
        entries = [DirEntry(name, True, size, count) for name, (count, size) in sorted(dirs.items())]
        if not entries and not files:
            what = "a file; use read_file" if rel in self.index.file_ids else "not a directory of the tree"
            return DirListing(rel, (), f"{rel!r} is {what}. Top-level: {self.tree.top_level()}")
        return DirListing(rel, tuple(entries + sorted(files, key=lambda e: e.name)))

    def read_file(self, path: str, start: int = 1, end: int | None = None) -> FileSlice:
        """Lines ``start``..``end`` (1-based, inclusive; clamped, at most MAX_READ_LINES) of a tree file.

        Include-style paths work too: ``cute/layout.hpp`` reads ``include/cute/layout.hpp``.
        """
        rel = normalize(path)
        fid = self.index.file_ids.get(rel)
        for root in INCLUDE_ROOTS:
            fid = fid if fid is not None else self.index.file_ids.get(root + rel)
        if fid is None:
            if any(p.startswith(rel + "/") for p in self.index.paths):
                raise CutlassPathError(f"{path!r} is a directory; use list_dir({rel!r})")
            raise CutlassPathError(f"No file {path!r} in the CUTLASS tree; find it with list_dir() or search()")
        rel = self.index.paths[fid]
        self.tree.resolve(rel)  # refuses a symlink out of the tree
        lines = self.index.lines(fid)
        total = len(lines)
        first = min(max(1, start), max(total, 1))
        last = min(total, end if end is not None else total, first + MAX_READ_LINES - 1)
        last = max(last, first) if total else 0
        message = f"continue with start={last + 1}" if last < total and (end is None or end > last) else ""
        return FileSlice(rel, first, last, total, tuple(lines[first - 1: last]), message)

    def examples(self, topic: str, limit: int = EXAMPLE_LIMIT) -> ExamplesResult:
        """Example files (under examples/, CuTe tutorials included) for a topic, with summary and key lines."""
        return self._examples.find(topic, max(1, min(limit, self.settings.max_results)))

    def _rank(self, e: SymbolEntry, qualifiers: list[str]) -> tuple:
        path = self.index.paths[e.fid]
        scope_rank = {"namespace": 0, "member": 1}.get(e.scope, 2)
        return (_mismatch(e, qualifiers), scope_rank, area_rank(path), e.specialization, _KIND_RANK.get(e.kind, 3),
                path, e.line)

    def _definition(self, e: SymbolEntry, with_snippet: bool) -> Definition:
        snippet = self._snippet(e) if with_snippet else ()
        return Definition(e.name, e.kind, self.index.paths[e.fid], e.line, e.namespace, e.parent, e.scope,
                          bool(e.specialization), snippet)

    def _snippet(self, e: SymbolEntry) -> tuple[tuple[int, str], ...]:
        """The declaration: template and qualifier lines above the name, the head below it, a type's first lines."""
        lines = self.index.lines(e.fid)
        python = self.index.paths[e.fid].endswith((".py", ".pyi"))
        i = e.line - 1
        first = i
        while first > 0 and i - first < 10:
            above = lines[first - 1].strip()
            if python and not above.startswith("@"):
                break  # decorators only
            if not above or above.endswith((";", "}", "{")) or above.startswith(("//", "/*", "*", "#")):
                break
            first -= 1
        last = i
        while last < len(lines) - 1 and last - i < 12 and not _ends_head(lines[last], e.kind, python):
            last += 1
        if e.kind in ("struct", "class", "union", "enum") and not e.specialization:
            last += 8  # the first members say what the type is
        last = min(last, len(lines) - 1, first + MAX_SNIPPET_LINES - 1)
        return tuple((n + 1, lines[n]) for n in range(first, last + 1))

    def _not_found(self, symbol: str, name: str) -> str:
        needle = name.lower()
        similar = sorted((n for n in self.index.symbols.by_name if needle in n.lower()), key=lambda n: (len(n), n))[:8]
        hint = f" Similar names: {', '.join(similar)}." if similar else ""
        return f"No definition of {symbol!r} found.{hint} Try search({name!r}) or find_usages({name!r})."
