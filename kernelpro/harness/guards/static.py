"""Static guards: read a candidate's syntax tree (and the CUDA source in its strings) for known reward hacks.

These run before any of the candidate's code does. They are precise rather than broad: each rule names one
pattern of a known hack, so an honest candidate never trips them; the dynamic guards in the worker back
them up for what syntax cannot show.
"""

from __future__ import annotations

import ast

from kernelpro.harness.guards.static_escape import escape_findings
from kernelpro.harness.guards.static_rules import (
    ALLOWED_ASSIGN_PREFIXES,
    ALLOWED_IMPORTS,
    CACHE_DECORATORS,
    DYNAMIC_CODE,
    FORBIDDEN_IMPORTS,
    JUDGE_REACH,
    L2_PERSISTENCE,
    MEMOISED_CALLS,
    PRECISION_SETTINGS,
    PROCESS_CALL_PREFIXES,
    PROCESS_CALLS,
    PROTECTED_MODULES,
    RUNTIME_PUBLIC,
    STREAM_SWITCHES,
    TIMER_WORDS,
    TORCH_ROOTS,
)
from kernelpro.harness.result import GuardFinding


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self) -> None:
        self.findings: list[GuardFinding] = []
        self.aliases: dict[str, str] = {}  # local name -> module path it stands for
        self.function_depth = 0
        self.identity_names: set[str] = set()  # variables holding a tensor's pointer or id
        self.handlers: dict[int, str | None] = {}  # exception handler line in a function -> its fallback, if any

    # -- helpers --------------------------------------------------------------------------------
    def flag(self, reason: str, message: str, node: ast.AST, severity: str = "reject") -> None:
        line = getattr(node, "lineno", None)
        if any(f.reason == reason and f.line == line for f in self.findings):
            return  # one finding per hack per line
        self.findings.append(GuardFinding(reason=reason, severity=severity, source="static",
                                          message=f"line {line}: {message}" if line else message, line=line))

    def resolve(self, node: ast.AST) -> str | None:
        """The full dotted path of an expression, with import aliases expanded (``F.relu`` -> torch.nn...)."""
        name = dotted_name(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        base = self.aliases.get(root, root)
        return f"{base}.{rest}" if rest else base

    def check_import(self, module: str, node: ast.AST) -> None:
        if module in ALLOWED_IMPORTS or module.startswith(tuple(a + "." for a in ALLOWED_IMPORTS)):
            self.check_runtime_name(module, node)
            return
        for forbidden, (reason, message) in FORBIDDEN_IMPORTS.items():
            if module == forbidden or module.startswith(forbidden + "."):
                self.flag(reason, message, node)
                return

    def check_runtime_name(self, name: str, node: ast.AST) -> None:
        """``kernelpro.runtime.X`` for a name outside its public API reaches the judge's side of it."""
        _, _, rest = name.partition("kernelpro.runtime.")
        if rest and rest.split(".")[0] not in RUNTIME_PUBLIC:
            self.flag("judge_patch", f"uses kernelpro.runtime.{rest.split('.')[0]}, which is not part of its public "
                      f"API ({', '.join(sorted(RUNTIME_PUBLIC))})", node)

    # -- imports --------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.check_import(alias.name, node)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                self.aliases.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level == 0:
            for alias in node.names:
                self.check_import(f"{module}.{alias.name}", node)
                self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
        self.generic_visit(node)

    # -- structure ------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if self.resolve(base) in ("Model",) or (isinstance(base, ast.Attribute) and base.attr == "Model"):
                self.flag("reference_reuse", f"class {node.name} subclasses the reference Model", node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            name = self.resolve(target) or ""
            # A memoised helper (a kernel built once per dtype) is honest; a memoised forward replays outputs.
            if name.split(".")[-1] in CACHE_DECORATORS and node.name in MEMOISED_CALLS:
                self.flag("cached_output", f"{node.name} is memoised with @{name}: outputs would be replayed",
                          decorator)
        self.function_depth += 1
        self.generic_visit(node)
        self.function_depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Try(self, node: ast.Try) -> None:
        if self.function_depth:
            for handler in node.handlers:
                fallback = self._fallback_in(handler)
                self.handlers[handler.lineno] = fallback
                if fallback:
                    # A guard around graph capture whose handler never runs is honest: the worker records
                    # whether a handler runs in a judged call (handler_probe) and rejects only then.
                    self.flag("try_except_fallback", f"the exception handler {fallback}; it is a rejection "
                              "if it runs while judged", handler, severity="warn")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def _fallback_in(self, handler: ast.ExceptHandler) -> str | None:
        for inner in ast.walk(handler):
            if isinstance(inner, ast.Return) and inner.value is not None:
                return "returns a result computed another way"
            if isinstance(inner, ast.Call):
                name = self.resolve(inner.func) or ""
                if name.split(".")[0] in TORCH_ROOTS or name.startswith("torch."):
                    return f"calls {name}"
                if name == "super" or name.startswith("super."):
                    return "calls super()"
        return None

    # -- names and calls ------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "Model" and isinstance(node.ctx, ast.Load):
            self.flag("reference_reuse", "uses the reference Model", node)
        elif node.id == "__builtins__":
            self.flag("judge_patch", "touches __builtins__", node)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self.resolve(node) or ""
        if name.startswith("kernelpro.runtime."):
            self.check_runtime_name(name, node)
        if name in JUDGE_REACH:
            self.flag("judge_patch", f"uses {name}, which reaches outside the candidate", node)
        elif node.attr == "Model" and isinstance(node.ctx, ast.Load):
            self.flag("reference_reuse", f"uses {name or 'the reference Model'}", node)
        elif node.attr in PRECISION_SETTINGS:
            self.flag("precision_downgrade", f"uses {name or node.attr}; the result is checked against a "
                      "float64 oracle at run time", node, severity="warn")
        if node.attr == "initial_seed":
            self.flag("cached_output", "reads the RNG seed, a key for replaying outputs", node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self.resolve(node.func) or ""
        last = name.split(".")[-1]
        if name.startswith("os.") and (last in PROCESS_CALLS or last.startswith(PROCESS_CALL_PREFIXES)):
            self.flag("background_process", f"calls {name}", node)
        elif name in DYNAMIC_CODE:
            self.flag("judge_patch", f"calls {name}, running code the static checks cannot see", node)
        elif name in STREAM_SWITCHES:
            self.flag("extra_stream", f"switches the caller's current stream with {name} (use the "
                      "torch.cuda.stream(...) context, which restores it)", node)
        elif name == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            owner = self.resolve(node.args[0])
            if owner and f"{owner}.{node.args[1].value}" in JUDGE_REACH:
                self.flag("judge_patch", f"uses {owner}.{node.args[1].value}, which reaches outside the "
                          "candidate", node)
        elif name in ("setattr", "delattr") and node.args:
            self._check_assignment_target(node.args[0], node, via=name)
        self._check_identity_keys(node)
        self.generic_visit(node)

    def _check_identity_keys(self, node: ast.Call) -> None:
        """Flag lookups keyed on a tensor's identity: ``cache.get(x.data_ptr())``, ``cache[id(x)]``."""
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("get", "setdefault", "pop", "__contains__"):
            if any(self._is_identity(n) for arg in node.args[:1] for n in ast.walk(arg)):
                self.flag("cached_output", "looks up a cache keyed on a tensor's pointer or id", node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if any(self._is_identity(n) for n in ast.walk(node.slice)):
            self.flag("cached_output", "indexes a cache by a tensor's pointer or id", node)
        self.generic_visit(node)

    def visit_Dict(self, node: ast.Dict) -> None:
        if any(key is not None and any(self._is_identity(n) for n in ast.walk(key)) for key in node.keys):
            self.flag("cached_output", "builds a cache keyed on a tensor's pointer or id", node)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(
            self._is_identity(n) for n in ast.walk(node.left)
        ):
            self.flag("cached_output", "checks a cache for a tensor's pointer or id", node)
        self.generic_visit(node)

    def _is_identity(self, node: ast.AST) -> bool:
        """A tensor's pointer or id, or a variable that holds one."""
        if isinstance(node, ast.Name):
            return node.id in self.identity_names
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        return (isinstance(func, ast.Name) and func.id == "id") or (
            isinstance(func, ast.Attribute) and func.attr == "data_ptr"
        )

    # -- assignments ----------------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_assignment_target(target, node)
        if any(self._is_identity(n) for n in ast.walk(node.value)):
            self.identity_names.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_assignment_target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_assignment_target(target, node)
        self.generic_visit(node)

    def _check_assignment_target(self, target: ast.AST, node: ast.AST, via: str = "assigns") -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._check_assignment_target(element, node, via)
            return
        name = self.resolve(target)
        if name is None or (via == "assigns" and "." not in name):
            return  # rebinding a plain name is harmless
        if name.split(".")[0] not in PROTECTED_MODULES or name.startswith(ALLOWED_ASSIGN_PREFIXES):
            return
        if set(name.split(".")) & TIMER_WORDS:
            self.flag("timer_patch", f"{via} {name}", node)
        else:
            self.flag("judge_patch", f"{via} {name}, which the judge relies on", node)

    # -- strings (inline CUDA/C++ source) -------------------------------------------------------
    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            if L2_PERSISTENCE.search(node.value):
                self.flag("l2_persistence", f"its source sets an L2 persistence policy "
                          f"({L2_PERSISTENCE.search(node.value).group(0)})", node)


def scan_source(source: str) -> list[GuardFinding]:
    """Every static finding for a candidate's source, in source order. Raises SyntaxError on bad Python."""
    tree = ast.parse(source)
    scanner = _Scanner()
    scanner.visit(tree)
    scanner.findings += escape_findings(tree)  # sandbox escapes and reaching the judge's memory
    # Identifiers in the code itself (not only strings) can set L2 persistence through bindings.
    for match in L2_PERSISTENCE.finditer(source):
        line = source.count("\n", 0, match.start()) + 1
        if not any(f.reason == "l2_persistence" and f.line == line for f in scanner.findings):
            scanner.flag("l2_persistence", f"sets an L2 persistence policy ({match.group(0)})",
                         ast.Pass(lineno=line))
    return sorted(scanner.findings, key=lambda f: (f.line or 0))


def handler_fallbacks(tree: ast.Module) -> dict[int, str | None]:
    """Each exception handler inside a function, by line: what makes it a fallback (``"calls torch.relu"``), or
    None where it computes no result (a log line, a flag, a re-raise)."""
    scanner = _Scanner()
    scanner.visit(tree)
    return scanner.handlers
