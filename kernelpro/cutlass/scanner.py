"""Where things are defined in C++/CUDA and Python source text, found with a few regex passes per file.

Not a parser: it follows braces and namespaces well enough to say where a class, struct, function, alias,
typedef or macro of CUTLASS-style code is defined, in which namespace, inside which class.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple


class Symbol(NamedTuple):
    """One definition in one file (which file is the caller's business)."""

    name: str
    kind: str
    """struct, class, union, enum, function, alias, typedef, macro; def, class or variable in Python."""
    line: int
    """1-based line of the name."""
    namespace: str = ""
    """``cute``, ``cutlass::gemm::collective``; for Python the dotted module."""
    parent: str = ""
    """Enclosing classes, ``::``- or ``.``-joined; empty at namespace scope."""
    scope: str = "namespace"
    """``namespace`` (or module level), ``member`` of a class, or ``local`` inside a function body."""
    specialization: bool = False
    """A partial or explicit template specialization (``struct Copy_Traits<SM90_TMA_LOAD, ...>``)."""


# Names followed by "(" that never start a function definition.
_NOT_FUNCTIONS = frozenset(
    "if for while switch return sizeof alignof alignas decltype static_assert catch defined operator throw new "
    "delete noexcept typeid __attribute__ __declspec __launch_bounds__ asm __asm__ volatile requires co_await".split()
)
_STATEMENT_WORDS = frozenset(
    "return else new delete throw case goto co_return co_yield typedef using do if for while switch namespace "
    "struct class union enum asm".split()
)
_ATTRS = r"(?:(?:alignas|__align__|CUTE_ALIGNAS|CUTLASS_ALIGN\w*|__declspec)\s*\([^()]*\)\s*|\[\[[^\]]*\]\]\s*)*"

# Each pass starts with literals only, so that the regex engine skips through text fast (a character class or a
# group as the first item of an alternative turns that off; one regex for everything is ten times slower on the
# 3 MB GMMA headers). Brace counting skips block comments, and line comments and strings that hold a brace;
# keywords inside other comments are recognised by the "//" before them on their line.
_STRUCTURE = re.compile(
    r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/"
    r"|//(?<!///)(?=([^\n{}]*))\1[{}][^\n]*"  # "(?=(...))\1" is atomic: no backtracking on "/////" rulers
    r"|\"[^\"\\\n{}]*(?:\\.[^\"\\\n{}]*)*[{}](?:\\.|[^\"\\\n])*\""
    r"|'\{'|'\}'"
    r"|\#[ \t]*define[ \t]+(\w+)[^\n\\]*(?:\\[\s\S][^\n\\]*)*"
    r"|\{|\}"
)
_NOT_TEMPLATE_PARAMETER = r"\b(?!\s+\w+\s*[,>=)]|\s*\.\.\.|\s*[,>=])"
_KEYWORDS = re.compile(
    r"namespace\b|using\b|typedef\b|struct" + _NOT_TEMPLATE_PARAMETER + "|class" + _NOT_TEMPLATE_PARAMETER
    + r"|union\b|enum\b"
)
# A line up to its first "(", when everything before it could be a declaration's head (atomic via lookahead).
_HEAD = re.compile(r"\n(?=([\w:<>,*&~ \t]*))\1\(")
_HEAD_NAME = re.compile(r"(~?[A-Za-z_]\w*)[ \t]*$")
_NAMESPACE = re.compile(r"namespace\b(?:\s+(\w+(?:::\w+)*))?\s*\{")
_TYPE = re.compile(
    r"(struct|class|union|enum(?:\s+(?:class|struct))?)\s+" + _ATTRS +
    r"([A-Za-z_]\w*)\s*(<[^;{}]*?>)?\s*(?:final\s*)?(?::(?!:)[^;{}]*)?\{"
)
_ALIAS = re.compile(r"using\s+([A-Za-z_]\w*)\s*=")
_TYPEDEF = re.compile(r"typedef\b[^;{}()]*?\b([A-Za-z_]\w*)\s*;")
# After a function's "(": a body "{" (not the "{}" of a default argument) before any ";" means a definition.
_HEAD_END = re.compile(r"\{(?!\s*\})|;")
_PY = re.compile(
    r"^(?P<indent>[ \t]*)(?:(?:async[ \t]+)?(?P<kw>def|class)[ \t]+(?P<name>[A-Za-z_]\w*)"
    r"|(?P<var>[A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=))",
    re.M,
)
_BLOCK = ("block", "")
# Keyword -> (pattern matched at the keyword, group holding the name, kind); the rest are type keywords.
_DECLARATIONS = {"using": (_ALIAS, 1, "alias"), "typedef": (_TYPEDEF, 1, "typedef")}
_OPEN, _CLOSE, _KEYWORD, _HEAD_EVENT = 0, 1, 2, 3


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _scope(stack: list[tuple[str, str]]) -> tuple[str, str, str]:
    """Namespace, enclosing classes and scope kind for a brace stack."""
    namespace = "::".join(name for kind, name in stack if kind == "ns" and name)
    parent = "::".join(name for kind, name in stack if kind == "type")
    if _BLOCK in stack:
        return namespace, parent, "local"
    return namespace, parent, "member" if parent else "namespace"


def _function_name(text: str, m: re.Match[str], stack: list[tuple[str, str]]) -> str | None:
    """The function a line's head defines, or None for calls, declarations and statements."""
    found = _HEAD_NAME.search(m[1])
    if not found:
        return None
    name, prefix = found[1], m[1][: found.start()].split()
    if name in _NOT_FUNCTIONS or (name.isupper() and len(name) > 1) or stack[-1:] == [("type", name)]:
        return None  # keywords, macro calls, constructors
    if prefix:
        if prefix[0] in _STATEMENT_WORDS or prefix[-1] in _STATEMENT_WORDS:
            return None
        if not (prefix[-1][-1] in ">*&:" or _is_word_char(prefix[-1][-1])):
            return None
    else:
        # CuTe style puts the return type on the lines above: "CUTE_HOST_DEVICE constexpr\nauto\nname(".
        end, prev = m.start(), ""
        for _ in range(3):
            begin = text.rfind("\n", 0, max(end, 1)) + 1
            prev = text[begin:end].strip()
            if prev or begin == 0:
                break
            end = begin - 1
        if not prev or prev.startswith(("#", "//", "*", "/*")) or prev.split()[-1] in _STATEMENT_WORDS:
            return None
        if not (prev[-1] in ">*&" or _is_word_char(prev[-1])):
            return None
    head_end = _HEAD_END.search(text, m.end())
    return name if head_end is not None and head_end.group() == "{" else None


def scan_cpp(text: str) -> list[Symbol]:
    """Definitions in C++/CUDA source, in file order."""
    text = "\n" + text  # every line, the first included, now starts after a "\n"; line numbers stay 1-based
    symbols: list[Symbol] = []
    skip_starts: list[int] = []
    skip_ends: list[int] = []
    events: list[tuple[int, re.Match[str] | None]] = []  # (position * 4 + event kind, match)
    for m in _STRUCTURE.finditer(text):
        first = text[m.start()]
        if first in "{}" and m.end() - m.start() == 1:
            events.append((m.start() * 4 + (_OPEN if first == "{" else _CLOSE), None))
            continue
        skip_starts.append(m.start())
        skip_ends.append(m.end())
        if m[2]:
            symbols.append(Symbol(m[2], "macro", text.count("\n", 0, m.start(2))))

    def skipped(pos: int) -> bool:
        i = bisect_right(skip_starts, pos) - 1
        return (i >= 0 and pos < skip_ends[i]) or text.find("//", text.rfind("\n", 0, pos), pos) >= 0

    events += [(m.start() * 4 + _KEYWORD, m) for m in _KEYWORDS.finditer(text)
               if not _is_word_char(text[m.start() - 1])]
    events += [((m.start() + 1) * 4 + _HEAD_EVENT, m) for m in _HEAD.finditer(text)]
    events.sort()  # three sorted runs, keys all distinct: cheap

    stack: list[tuple[str, str]] = []
    blocks = 0  # function bodies and other blocks on the stack: no function is defined inside one
    owned: dict[int, tuple[str, str]] = {}  # brace position -> the namespace or class it opens
    consumed = 0  # end of the last type head, so "enum class X {" is not also a class X
    scope: tuple[str, str, str] | None = None  # of the current stack, computed when a symbol needs it
    line, last = 0, 0
    for key, m in events:
        pos, kind = divmod(key, 4)
        if kind == _OPEN:
            opened = owned.pop(pos, None)
            if opened is None:  # extern "C" { ... } is transparent, like a namespace without a name
                opened = ("ns", "") if text[max(0, pos - 12):pos].rstrip().endswith('extern "C"') else _BLOCK
            stack.append(opened)
            blocks += opened is _BLOCK
            scope = None
            continue
        if kind == _CLOSE:
            if stack:
                blocks -= stack.pop() is _BLOCK
                scope = None
            continue
        if pos < consumed or m is None or (kind == _HEAD_EVENT and blocks) or skipped(pos):
            continue
        if kind == _HEAD_EVENT:
            name = _function_name(text, m, stack)
            found, group, kind_name = (m, 1, "function") if name else (None, 0, "")
        else:
            word = m.group()
            if word == "namespace":
                ns = _NAMESPACE.match(text, pos)
                if ns:
                    owned[ns.end() - 1] = ("ns", ns[1] or "")
                continue
            pattern, group, kind_name = _DECLARATIONS.get(word, (_TYPE, 2, ""))
            found = pattern.match(text, pos)
            name = found[group] if found else None
        if not found or not name:
            continue
        name_pos = found.start(group) + (found[group].rfind(name) if kind_name == "function" else 0)
        line += text.count("\n", last, name_pos)
        last = name_pos
        specialization = False
        if group == 2:  # a class, struct, union or enum with a body
            kind_name, specialization = found[1].split()[0], found[3] is not None
            owned[found.end() - 1] = ("type", name)
            consumed = found.end() - 1
        scope = scope or _scope(stack)
        symbols.append(Symbol(name, kind_name, line, *scope, specialization))
    symbols.sort(key=lambda s: s.line)
    return symbols


def scan_python(text: str, module: str) -> list[Symbol]:
    """Classes, functions and module-level names in Python source; ``module`` is the dotted module name."""
    symbols: list[Symbol] = []
    stack: list[tuple[int, str, str]] = []  # (indent, kind, name) of the enclosing defs and classes
    line, last = 1, 0
    for m in _PY.finditer(text):
        indent = len(m["indent"].expandtabs(4))
        if m["var"] is not None and indent:
            continue  # assignments only count at module level
        while stack and stack[-1][0] >= indent:
            stack.pop()
        line += text.count("\n", last, m.start())
        last = m.start()
        if m["var"] is not None:
            symbols.append(Symbol(m["var"], "variable", line, module))
            continue
        parent = ".".join(name for _, kind, name in stack if kind == "class")
        scope = "local" if any(kind == "def" for _, kind, _ in stack) else ("member" if parent else "namespace")
        symbols.append(Symbol(m["name"], m["kw"], line, module, parent, scope))
        stack.append((indent, m["kw"], m["name"]))
    return symbols
