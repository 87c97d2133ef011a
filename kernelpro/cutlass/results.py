"""What the browser's operations return: plain frozen dataclasses, each with a ``render()`` for an LLM.

Rendered text is capped (line widths and total size) so that any reply fits comfortably in a context window;
what was cut is always counted, so the reader knows to narrow the query.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_LINE_CHARS = 160
MAX_HEADLINE_CHARS = 240  # a qualified name and a path: cut only when absurdly long
MAX_RENDER_CHARS = 6000
MAX_READ_RENDER_CHARS = 9000

NumberedLine = tuple[int, str]


def clip(text: str, width: int = MAX_LINE_CHARS) -> str:
    """One line, tabs expanded, trailing space removed, cut to ``width`` characters."""
    line = text.expandtabs(4).rstrip()
    return line if len(line) <= width else line[: width - 4] + " ..."


def fit(lines: list[str], budget: int = MAX_RENDER_CHARS,
        more: str = "... {n} more lines not shown; narrow the query") -> str:
    """Join lines, dropping the tail beyond ``budget`` characters for ``more`` (``{n}`` dropped, ``{i}`` first)."""
    out: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        if used + len(line) + 1 > budget:
            out.append(more.format(n=len(lines) - i, i=i))
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)


def _numbered(lines: tuple[NumberedLine, ...], mark: int = 0) -> list[str]:
    width = len(str(max((n for n, _ in lines), default=1)))
    return [f"{'>' if n == mark else ' '}{n:>{width}}  {clip(text)}" for n, text in lines]


@dataclass(frozen=True)
class SearchHit:
    """A matching line with one line of context either side."""

    path: str
    line: int
    context: tuple[NumberedLine, ...]
    score: float = 0.0


@dataclass(frozen=True)
class SearchResult:
    """Ranked hits of a word or regex search, capped at the browser's ``max_results``."""

    query: str
    mode: str
    """``words`` or ``regex``."""
    hits: tuple[SearchHit, ...]
    total_hits: int
    total_files: int
    message: str = ""

    def render(self) -> str:
        if not self.hits:
            return self.message or f"No matches for {self.query!r}."
        head = f"{len(self.hits)} of {self.total_hits} hits ({self.total_files} files) for {self.mode} {self.query!r}"
        lines = [head + (f"; {self.message}" if self.message else "")]
        previous, shown_to = "", 0
        for hit in self.hits:
            if hit.path != previous:
                lines.append(f"{hit.path}:")
                previous, shown_to = hit.path, 0
            context = tuple(c for c in hit.context if c[0] > shown_to)  # neighbouring hits share context lines
            lines += _numbered(context, hit.line)
            shown_to = max(shown_to, hit.context[-1][0] if hit.context else 0)
        return fit(lines)


@dataclass(frozen=True)
class Definition:
    """Where a symbol is defined; ``snippet`` holds its declaration (template lines included) for the best few."""

    name: str
    kind: str
    path: str
    line: int
    namespace: str
    parent: str
    scope: str
    specialization: bool
    snippet: tuple[NumberedLine, ...] = ()

    @property
    def qualified_name(self) -> str:
        sep = "." if self.path.endswith((".py", ".pyi")) else "::"
        return sep.join(p for p in (self.namespace, self.parent, self.name) if p)

    def headline(self) -> str:
        spec = " specialization" if self.specialization else ""
        where = "" if self.scope == "namespace" else f" ({self.scope})"
        return f"{self.kind}{spec} {self.qualified_name}{where}  {self.path}:{self.line}"


@dataclass(frozen=True)
class DefinitionResult:
    """Definitions of a symbol, best first: primary templates at namespace scope in include/ lead."""

    query: str
    definitions: tuple[Definition, ...]
    total: int
    message: str = ""

    def render(self) -> str:
        if not self.definitions:
            return self.message or f"No definition of {self.query!r} found."
        lines = [f"{self.total} definition(s) of {self.query!r}" + (f"; {self.message}" if self.message else "")]
        listed = [d for d in self.definitions if not d.snippet]
        for d in self.definitions:
            if d.snippet:
                lines += ["", clip(d.headline(), MAX_HEADLINE_CHARS), *_numbered(d.snippet, d.line)]
        if listed:
            lines += ["", "Also:"] + [f"  {clip(d.headline(), MAX_HEADLINE_CHARS)}" for d in listed]
        if self.total > len(self.definitions):
            hint = "" if "::" in self.query or "." in self.query else f", e.g. cute::{self.query}"
            lines.append(f"  ... {self.total - len(self.definitions)} more; qualify the name to narrow{hint}")
        return fit(lines)


@dataclass(frozen=True)
class FileUsages:
    """How often a symbol occurs in one file, with the first few lines."""

    path: str
    count: int
    lines: tuple[NumberedLine, ...]


@dataclass(frozen=True)
class UsageResult:
    """Whole-word uses of a symbol outside its definitions, grouped by file."""

    symbol: str
    files: tuple[FileUsages, ...]
    total_hits: int
    total_files: int
    message: str = ""

    def render(self) -> str:
        if not self.files:
            return self.message or f"No uses of {self.symbol!r} found."
        lines = [f"{self.total_hits} uses of {self.symbol!r} in {self.total_files} files"
                 + (f" (showing {len(self.files)} files)" if self.total_files > len(self.files) else "")]
        for usage in self.files:
            lines.append(f"{usage.path} ({usage.count}):")
            lines += [f"  {n:>5}  {clip(text.strip())}" for n, text in usage.lines]
        return fit(lines)


@dataclass(frozen=True)
class DirEntry:
    """A file (with its size) or a directory (with the number of files below it)."""

    name: str
    is_dir: bool
    size: int
    files: int = 0


@dataclass(frozen=True)
class DirListing:
    """The entries of one directory of the tree."""

    path: str
    entries: tuple[DirEntry, ...]
    message: str = ""

    def render(self) -> str:
        if not self.entries:
            return self.message or f"{self.path or '.'} is empty."
        lines = [f"{self.path or '.'}/ ({len(self.entries)} entries)" + (f"; {self.message}" if self.message else "")]
        for e in self.entries:
            size = f"{e.size / 1024:.0f} KB" if e.size >= 1024 else f"{e.size} B"
            lines.append(f"  {e.name}/  {e.files} files, {size}" if e.is_dir else f"  {e.name}  {size}")
        return fit(lines, more="... {n} more entries not shown")


@dataclass(frozen=True)
class FileSlice:
    """A range of a file's lines."""

    path: str
    start: int
    end: int
    total_lines: int
    lines: tuple[str, ...]
    message: str = ""

    def render(self) -> str:
        numbered = _numbered(tuple(zip(range(self.start, self.end + 1), self.lines, strict=False)))
        head = f"{self.path} lines {self.start}-{self.end} of {self.total_lines}"
        out, used = [head + (f"; {self.message}" if self.message else "")], len(head)
        for k, line in enumerate(numbered):
            if used + len(line) + 1 > MAX_READ_RENDER_CHARS:
                out.append(f"... {len(numbered) - k} more lines not shown; continue with start={self.start + k}")
                break
            out.append(line)
            used += len(line) + 1
        return "\n".join(out)


@dataclass(frozen=True)
class ExampleHit:
    """An example file for a topic: what it is, and the lines that show the topic."""

    path: str
    summary: str
    score: float
    key_lines: tuple[NumberedLine, ...]


@dataclass(frozen=True)
class ExamplesResult:
    """Example files ranked for a topic."""

    topic: str
    terms: tuple[str, ...]
    examples: tuple[ExampleHit, ...]
    message: str = ""

    def render(self) -> str:
        if not self.examples:
            return self.message or f"No examples found for {self.topic!r}."
        lines = [f"Examples for {self.topic!r} (terms: {', '.join(self.terms[:12])})"]
        for ex in self.examples:
            lines += [f"{ex.path}  [{ex.score:.1f}]", f"  {clip(ex.summary, 140)}"]
            lines += [f"  {n:>5}  {clip(text.strip(), 120)}" for n, text in ex.key_lines]
        return fit(lines)
