"""Compiler output turned into a few short, line-referenced messages an LLM can act on.

Understands the EDG front end's format shared by NVRTC and nvcc (``kernel.cu(12): error: ...``, with its
source line, caret and "detected during instantiation" chain), the host compiler's (``kernel.cu:1:10: fatal
error: ...``) and the tools' own (``ptxas error : ...``, ``nvcc fatal : ...``, ``nvrtc: error: ...``).
Template noise is folded into one line: the user's source line that started the instantiation, and the
chain of function names that led from it to the error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

EDG_HEADER = re.compile(r"^(?P<file>[^\s(][^(]*?)\((?P<line>\d+)\): "
                        r"(?P<sev>catastrophic error|error|warning|remark|note)(?: #(?P<code>[\w-]+))?: (?P<msg>.*)$")
GCC_HEADER = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? "
                        r"(?P<sev>fatal error|error|warning|note): (?P<msg>.*)$")
TOOL_HEADER = re.compile(r"^\s*(?P<tool>ptxas|nvcc|nvlink|nvrtc|fatbinary)(?: (?P<file>\S+), line (?P<line>\d+);)?:?"
                         r"\s+(?P<sev>error|fatal|warning)\s*: (?P<msg>.*)$")
INSTANTIATION = re.compile(r'(?:instantiation of|implicit generation of|processing of template argument list for) '
                           r'"(?P<what>.*)" at line (?P<line>\d+)(?: of (?P<file>.+?))?$')
DETAIL = re.compile(r"^\s+(?:argument types are|operand types are|object type is|return type is|types are)\b")
CARET = re.compile(r"^(?:\s*\|)?\s*\^~*\s*$")
GCC_SOURCE = re.compile(r"^\s*\d*\s+\|")
NOISE = re.compile(r"^(?:Remark: The warnings can be suppressed|\d+ (?:catastrophic )?errors? detected in the "
                   r"compilation|[Cc]ompilation terminated|In file included from|\s+from |ptxas info|ptxas\s+\."
                   r"|\s+\d+ bytes stack frame)")
NAME_MAP = "__nv_name_map"

Severity = Literal["error", "warning"]


class Diagnostic(BaseModel):
    """One compiler message, with where it points and what led there."""

    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    tool: str | None = None
    details: list[str] = Field(default_factory=list)
    snippet: list[str] = Field(default_factory=list)
    """The source line and caret as the compiler printed them."""
    via: list[str] = Field(default_factory=list)
    """Template instantiations that led to the error, outermost first."""
    instantiated_from: int | None = None
    """The line of the main source file where that chain started."""


def short_path(path: str) -> str:
    """Headers by their include path (``cute/tensor.hpp``), not the site-packages path they were found under."""
    if "/include/" in path:
        return path.rsplit("/include/", 1)[1]
    return path


def short_name(signature: str) -> str:
    """``auto cute::append<N,T,X>(const T &, ...) [with ...]`` -> ``cute::append``."""
    text = signature.split(" [with ", 1)[0]
    head = text.split("(", 1)[0].strip()
    while (stripped := re.sub(r"<[^<>]*>", "", head)) != head:
        head = stripped
    return head.split()[-1] if head.split() else text[:60]


def collapse_templates(text: str, depth: int = 2) -> str:
    """Nested template arguments below ``depth`` become ``<...>``, so a CuTe type fits on a line."""
    out, level = [], 0
    for ch in text:
        if ch == "<":
            level += 1
            if level == depth + 1:
                out.append("<...>")
            if level > depth:
                continue
        elif ch == ">" and level > 0:
            level -= 1
            if level >= depth:
                continue
        elif level > depth:
            continue
        out.append(ch)
    return "".join(out)


def _clip(text: str, limit: int) -> str:
    if len(text) > limit:
        text = collapse_templates(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _new(sev: str, msg: str, file: str | None, line: str | None, col: str | None = None,
         tool: str | None = None) -> Diagnostic:
    severity: Severity = "warning" if sev == "warning" else "error"
    return Diagnostic(severity=severity, message=msg.strip(), file=file, line=int(line) if line else None,
                      column=int(col) if col else None, tool=tool)


def parse(log: str, main_file: str = "kernel.cu") -> list[Diagnostic]:
    """Every error and warning in ``log`` (notes and remarks dropped), in order, without duplicates."""
    found: list[Diagnostic] = []
    current: Diagnostic | None = None
    chain: list[tuple[str, int, str | None]] = []
    in_note = False  # a note's own lines are dropped, but the instantiation chain after it is its error's
    for raw in log.replace("\x00", "").splitlines():
        line = raw.rstrip()
        edg, gcc, tool = EDG_HEADER.match(line), GCC_HEADER.match(line), TOOL_HEADER.match(line)
        if edg or gcc or tool:
            m = edg or gcc or tool
            in_note = m["sev"] in ("note", "remark")
            if in_note:
                continue
            _finish(current, chain, main_file)
            chain, current = [], None
            if tool:
                msg = re.sub(r"0x[0-9a-fA-F]+", lambda h: str(int(h.group(0), 16)), m["msg"])
                current = _new(m["sev"], msg, m["file"], m["line"], tool=m["tool"])
            else:
                current = _new(m["sev"], m["msg"], short_path(m["file"]), m["line"], gcc["col"] if gcc else None)
            found.append(current)
        elif current is None or NOISE.match(line):
            continue
        elif not line.strip():
            _finish(current, chain, main_file)
            chain, current = [], None
        elif inst := INSTANTIATION.search(line):
            chain.append((short_name(inst["what"]), int(inst["line"]), inst["file"]))
        elif "detected during" in line or in_note:
            continue
        elif DETAIL.match(line):
            current.details.append(line.strip())
        elif not chain and current.tool is None and (CARET.match(line) or GCC_SOURCE.match(line)
                                                     or not current.snippet):
            current.snippet.append(line)
    _finish(current, chain, main_file)
    unique: dict[tuple, Diagnostic] = {}
    for d in found:
        unique.setdefault((d.file, d.line, d.message), d)
    return list(unique.values())


def _finish(d: Diagnostic | None, chain: list[tuple[str, int, str | None]], main_file: str) -> None:
    if d is None:
        return
    if d.file == NAME_MAP:
        quoted = next(iter(re.findall(r'"([^"]*)"', d.message)), "")
        d.message = f'no kernel named "{quoted.strip()}" in the source (NVRTC could not resolve that name)'
        d.file, d.line, d.snippet, d.tool = None, None, [], "nvrtc"
    if d.column is None and len(d.snippet) >= 2 and CARET.match(d.snippet[1]):
        d.column = max(1, d.snippet[1].index("^") - 1)  # EDG indents the echoed line by two spaces
    if chain:
        d.via = [name for name, _, _ in reversed(chain)]
        for _, line, file in reversed(chain):
            if os.path.basename(file or d.file or "") == main_file:
                d.instantiated_from = line
                break


def _source_line(source: str | None, number: int | None) -> str | None:
    if source is None or number is None:
        return None
    lines = source.splitlines()
    return lines[number - 1] if 0 < number <= len(lines) else None


def _printed_source(echoed: str) -> str:
    """The source text of a line the compiler echoed: EDG indents it by two spaces, gcc prefixes ``N |``."""
    return echoed.split("|", 1)[1][1:] if GCC_SOURCE.match(echoed) else echoed[2:]


def render_one(d: Diagnostic, source: str | None = None, main_file: str = "kernel.cu") -> str:
    """One diagnostic as a few lines: location and message, details, the source line, how it was reached."""
    own = _source_line(source, d.line) if d.file == main_file else None
    printed = _printed_source(d.snippet[0]) if d.snippet else None
    # nvcc echoes the preprocessed line (__device__ spelled out), where the column means nothing to the author.
    column = d.column if own is None or (printed is not None and printed.rstrip() == own.rstrip()) else None
    if d.file and d.line:
        where = f"{d.file}:{d.line}" + (f":{column}" if column else "")
    else:
        where = d.tool or "compiler"
    out = [f"{where}: {d.severity}: {_clip(d.message, 400)}"]
    out += [f"    {_clip(detail, 300)}" for detail in d.details[:3]]
    if own is not None:
        out.append(f"{d.line:>5} | {own.rstrip()}")
        if column:
            out.append(f"      | {' ' * (column - 1)}^")
    else:
        out += [f"  {_clip(s, 200)}" for s in d.snippet[:2]]
    if d.via:
        names = d.via if len(d.via) <= 4 else [*d.via[:2], "...", *d.via[-2:]]
        origin = f"{main_file}:{d.instantiated_from}" if d.instantiated_from else "a template"
        out.append(f"  instantiated from {origin} via {' -> '.join(_clip(n, 80) for n in names)}")
        line = _source_line(source, d.instantiated_from)
        if line is not None and d.instantiated_from != d.line:
            out.append(f"{d.instantiated_from:>5} | {line.rstrip()}")
    return "\n".join(out)


def condense(log: str, source: str | None = None, main_file: str = "kernel.cu", warnings: bool = False,
             max_messages: int = 8, max_chars: int = 3000) -> str:
    """The compiler's output as at most ``max_messages`` messages in about ``max_chars`` characters.

    Errors only unless ``warnings``; when nothing in the log parses, its last meaningful lines instead.
    """
    diags = [d for d in parse(log, main_file) if warnings or d.severity == "error"]
    if not diags:
        lines = [ln for ln in log.replace("\x00", "").splitlines() if ln.strip() and not NOISE.match(ln)]
        return "\n".join(lines)[-max_chars:]
    return pack_blocks((render_one(d, source, main_file) for d in diags[:max_messages]), len(diags), max_chars,
                       "message")


def pack_blocks(blocks: Iterable[str], total: int, max_chars: int, noun: str) -> str:
    """Rendered diagnostics within ``max_chars`` (the first always, cut to it), then how many of ``total`` were
    left out (``... and 3 more messages``)."""
    kept: list[str] = []
    used = 0
    for block in blocks:
        if kept and used + len(block) > max_chars:
            break
        kept.append(block[:max_chars])
        used += len(block) + 1
    if len(kept) < total:
        left = total - len(kept)
        kept.append(f"... and {left} more {noun}{'s' if left > 1 else ''}")
    return "\n".join(kept)
