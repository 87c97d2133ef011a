"""Which of the candidate's own exception handlers ran while it was judged.

The candidate's source is rewritten before it runs: each ``except`` body starts with a call that records the
handler's line. This is an AST rewrite rather than a trace hook (``sys.settrace``, ``sys.monitoring``): it works
the same on Python 3.10 to 3.12, costs nothing on the path that raises no exception, sees only the candidate's
code (never torch's or the judge's), and leaves the interpreter's trace hooks alone, which the long-lived
worker checks between candidates. Line numbers do not move, so tracebacks still point at the user's lines.

A handler that ran in a judged call and computes a result another way (``guards.static.handler_fallbacks``) is
a fallback: the result came from it, and the candidate is rejected. Any other handler that ran (a flag set, a
log line) is a warning. Handlers that never run while judged, such as a guard around CUDA-graph capture, are
legitimate and cost nothing.
"""

from __future__ import annotations

import ast
import secrets
import types
from typing import Any

from kernelpro.harness.guards.static import handler_fallbacks
from kernelpro.harness.result import GuardFinding


class _Instrument(ast.NodeTransformer):
    def __init__(self, recorder: str) -> None:
        self.recorder = recorder

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.ExceptHandler:
        self.generic_visit(node)
        call = ast.Expr(ast.Call(ast.Name(self.recorder, ast.Load()), [ast.Constant(node.lineno)], []))
        node.body.insert(0, ast.copy_location(call, node.body[0]))
        return node


class HandlerProbe:
    """Instruments one candidate's source, then says which handlers ran since it was last asked."""

    def __init__(self) -> None:
        # An unguessable global name: the candidate's source cannot name it, and replacing it is noticed.
        self.name = f"_kernelpro_handler_{secrets.token_hex(8)}"
        self.fallbacks: dict[int, str | None] = {}
        self._fired: list[int] = []
        self._record = self._fired.append  # a builtin method: no Python frame per handler run
        self._namespace: dict[str, Any] | None = None
        self._seen = 0
        self._warned: set[int] = set()

    def compile(self, source: str, filename: str) -> types.CodeType:
        """The candidate's code with every handler instrumented (raises SyntaxError as ``compile`` does)."""
        tree = ast.parse(source, filename)
        self.fallbacks = handler_fallbacks(tree)
        tree = _Instrument(self.name).visit(tree)
        ast.fix_missing_locations(tree)
        return compile(tree, filename, "exec")

    def install(self, namespace: dict[str, Any]) -> None:
        """Bind the recorder in the module's globals, before its code runs."""
        namespace[self.name] = self._record
        self._namespace = namespace

    def skip(self) -> None:
        """Forget handlers that ran so far (at import and in ``__init__``, which are not judged calls)."""
        self._seen = len(self._fired)

    def check(self, findings: list[GuardFinding]) -> list[GuardFinding]:
        """Rejections for fallbacks that ran since the last check; other handlers that ran are added to
        ``findings`` as warnings, once per handler."""
        fired = self._fired[self._seen:]
        self._seen = len(self._fired)
        if self._namespace is not None and self._namespace.get(self.name) is not self._record:
            return [_finding("judge_patch", "the judge's exception-handler probe was replaced or removed")]
        rejects = []
        for line in dict.fromkeys(fired):
            fallback = self.fallbacks.get(line)
            if fallback:
                rejects.append(_finding("try_except_fallback", f"line {line}: the exception handler ran in a "
                                        f"judged call and {fallback}", line=line))
            elif line not in self._warned:
                self._warned.add(line)
                findings.append(_finding("try_except_fallback", f"line {line}: the exception handler ran in a "
                                         "judged call (it computes no result itself)", severity="warn", line=line))
        return rejects


def _finding(reason: str, message: str, severity: str = "reject", line: int | None = None) -> GuardFinding:
    return GuardFinding(reason=reason, severity=severity, source="dynamic", message=message, line=line)
