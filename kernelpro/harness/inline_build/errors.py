"""A failed extension build's log (ninja, nvcc, the host compiler, the linker) as a few line-referenced messages.

torch writes ``load_inline``'s strings to ``main.cpp`` (after ``#include <torch/extension.h>``, before the
generated pybind11 bindings) and ``cuda.cu`` (after three ``#include`` lines). Each message is moved back to
the string it came from and, where the string is a literal in the candidate, to the candidate's own line, then
rendered like the NVRTC path's (``compile/diagnostics``): location, message, the source line and caret.
"""

from __future__ import annotations

import os
import re

from kernelpro.harness.compile.diagnostics import Diagnostic, condense, pack_blocks, parse, render_one
from kernelpro.harness.inline_build.spec import InlineSpec

NINJA_NOISE = re.compile(r"^(?:\[\d+/\d+\] |FAILED: |ninja: |\S*(?:c\+\+|g\+\+|nvcc|cc1plus)\s+-)")
CANDIDATE_FILE = "candidate.py"
IMPLICIT_LINES = {"cpp_sources": 1, "cuda_sources": 3}  # the #include lines torch puts before each


def _origin(spec: InlineSpec, file: str | None) -> str | None:
    base = os.path.basename(file or "")
    if spec.kind == "inline" and base == "main.cpp":
        return "cpp_sources"
    if spec.kind == "inline" and base == "cuda.cu":
        return "cuda_sources"
    return None


def _relocate(d: Diagnostic, spec: InlineSpec, texts: dict[str, str]) -> tuple[Diagnostic, str | None, str]:
    """The diagnostic pointed at the candidate's line (or at the string's own line), with the text to quote."""
    origin = _origin(spec, d.file)
    if origin is None or d.line is None:
        return d, None, "kernel.cu"
    line = d.line - (0 if spec.no_implicit_headers else IMPLICIT_LINES[origin])
    text = texts[origin]
    if line < 1:
        return d.model_copy(update={"file": "torch/extension.h (included by load_inline)", "line": None}), None, ""
    if line > len(text.splitlines()):
        bindings = f"the bindings load_inline generates for functions={list(spec.functions or [])}"
        return d.model_copy(update={"file": bindings, "line": None}), None, ""
    if origin in spec.source_lines:
        start = spec.source_lines[origin]
        return d.model_copy(update={"file": CANDIDATE_FILE, "line": start + line - 1}), None, CANDIDATE_FILE
    return d.model_copy(update={"file": origin, "line": line}), text, origin


def condense_build_log(log: str, spec: InlineSpec, candidate_source: str | None = None, max_messages: int = 8,
                       max_chars: int = 3000) -> str:
    """At most ``max_messages`` errors in about ``max_chars`` characters, each pointing at the candidate's code."""
    texts = {"cpp_sources": "\n".join(spec.cpp_sources), "cuda_sources": "\n".join(spec.cuda_sources)}
    errors = [d for d in parse(log, main_file="cuda.cu") if d.severity == "error"]
    if not errors:
        kept = "\n".join(ln for ln in log.splitlines() if ln.strip() and not NINJA_NOISE.match(ln))
        return condense(kept, max_chars=max_chars) or log[-max_chars:]

    def rendered(d: Diagnostic) -> str:
        moved, text, main_file = _relocate(d, spec, texts)
        quoted = candidate_source if main_file == CANDIDATE_FILE else text
        return render_one(moved.model_copy(update={"via": moved.via, "instantiated_from": None}), quoted, main_file)

    return pack_blocks((rendered(d) for d in errors[:max_messages]), len(errors), max_chars, "error")
