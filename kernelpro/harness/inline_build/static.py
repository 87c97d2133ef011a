"""A candidate's ``load_inline``/``load`` calls, read from its source without running it.

Arguments resolve when they are literals, names bound once to such values (at module level, or in the
function that makes the call), ``+`` of strings or lists, f-strings of those, and ``"sep".join`` of a literal
list. Anything else (a value computed at run time, a file path built from ``__file__``) leaves the call
unresolved, with the reason: the worker then builds it as torch always does.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelpro.harness.inline_build.spec import InlineSpec, Unsupported, bind_arguments, spec_from_arguments

CPP_EXTENSION = "torch.utils.cpp_extension"


class _Unresolved(ValueError):
    pass


@dataclass(frozen=True)
class Text:
    """A resolved string and the candidate line its first line is on (None when it is pieced together)."""

    value: str
    line: int | None = None


@dataclass
class UnresolvedCall:
    """A call the judge cannot build ahead, and why."""

    line: int
    reason: str


@dataclass
class FoundCalls:
    specs: list[InlineSpec] = field(default_factory=list)
    unresolved: list[UnresolvedCall] = field(default_factory=list)


def _assignments(body: list[ast.stmt]) -> dict[str, list[ast.expr]]:
    """Every value bound to a plain name by the statements of ``body`` (not inside nested functions/classes)."""
    bound: dict[str, list[ast.expr]] = {}

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        bound.setdefault(name.id, []).append(node.value if target is name else ast.Constant(...))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            bound.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            bound.setdefault(node.target.id, []).append(ast.Constant(...))  # a second binding: unknown
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr, ast.Import,
                               ast.ImportFrom, ast.ExceptHandler)):
            for name in _stored_names(node):
                bound.setdefault(name, []).append(ast.Constant(...))
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in body:
        visit(statement)
    return bound


def _stored_names(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, ast.ExceptHandler):
        return [node.name] if node.name else []
    targets: list[ast.AST] = []
    if isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    elif isinstance(node, ast.NamedExpr):
        targets = [node.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


class _Scope:
    """Names whose value is known: bound exactly once, to something that resolves."""

    def __init__(self, bound: dict[str, list[ast.expr]], outer: _Scope | None, rebound: set[str],
                 parameters: frozenset[str] = frozenset()) -> None:
        self.bound, self.outer, self.rebound, self.parameters = bound, outer, rebound, parameters
        self.resolving: set[str] = set()

    def lookup(self, name: str) -> Any:
        if name in self.parameters:
            raise _Unresolved(f"{name} is a parameter of the function that makes the call")
        if name in self.bound:
            values = self.bound[name]
            if len(values) != 1 or name in self.rebound or name in self.resolving:
                raise _Unresolved(f"{name} is bound more than once")
            self.resolving.add(name)
            try:
                return self.evaluate(values[0])
            finally:
                self.resolving.discard(name)
        if self.outer is not None:
            return self.outer.lookup(name)
        raise _Unresolved(f"{name} is not a value the judge can read from the source")

    def evaluate(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            if node.value is ...:
                raise _Unresolved("a value computed at run time")
            return Text(node.value, node.lineno) if isinstance(node.value, str) else node.value
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.evaluate(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise _Unresolved("a ** expansion")
            return {_plain(self.evaluate(k)): self.evaluate(v) for k, v in zip(node.keys, node.values, strict=True)}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.evaluate(node.left), self.evaluate(node.right)
            if isinstance(left, Text) and isinstance(right, Text):
                return Text(left.value + right.value, left.line)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            raise _Unresolved("+ of values that are not both strings or both lists")
        if isinstance(node, ast.JoinedStr):
            return Text("".join(self._formatted(part) for part in node.values))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
                and len(node.args) == 1 and not node.keywords):
            separator, items = self.evaluate(node.func.value), self.evaluate(node.args[0])
            if isinstance(separator, Text) and isinstance(items, list) and all(isinstance(i, Text) for i in items):
                return Text(separator.value.join(i.value for i in items))
        raise _Unresolved(f"a value computed at run time ({type(node).__name__})")

    def _formatted(self, part: ast.expr) -> str:
        if isinstance(part, ast.Constant):
            return str(part.value)
        if isinstance(part, ast.FormattedValue) and part.format_spec is None:
            value = _plain(self.evaluate(part.value))
            if isinstance(value, (str, int, float, bool)) or value is None:
                return {-1: str, 115: str, 114: repr, 97: ascii}[part.conversion](value)
        raise _Unresolved("an f-string with a format spec or a non-scalar value")


def _plain(value: Any) -> Any:
    if isinstance(value, Text):
        return value.value
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _callee_kinds(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """Names the module binds to ``load_inline``/``load`` (name -> kind), and to the cpp_extension module."""
    functions: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == CPP_EXTENSION:
            for alias in node.names:
                if alias.name in ("load_inline", "load"):
                    functions[alias.asname or alias.name] = "inline" if alias.name == "load_inline" else "load"
        elif isinstance(node, ast.ImportFrom) and node.module == "torch.utils":
            modules |= {a.asname or a.name for a in node.names if a.name == "cpp_extension"}
        elif isinstance(node, ast.Import):
            modules |= {a.asname for a in node.names if a.name == CPP_EXTENSION and a.asname}
    return functions, modules


def _kind(func: ast.expr, functions: dict[str, str], modules: set[str]) -> str | None:
    if isinstance(func, ast.Name):
        return functions.get(func.id)
    if isinstance(func, ast.Attribute) and func.attr in ("load_inline", "load"):
        owner = ast.unparse(func.value)
        if owner in modules or owner.endswith("cpp_extension"):
            return "inline" if func.attr == "load_inline" else "load"
    return None


def _enclosing_functions(tree: ast.Module) -> dict[ast.Call, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
    found: dict[ast.Call, list] = {}

    def visit(node: ast.AST, stack: list) -> None:
        if isinstance(node, ast.Call):
            found[node] = stack
        inner = [*stack, node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else stack
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, [])
    return found


def find_calls(candidate_source: str, base_dir: Path | None = None) -> FoundCalls:
    """Every ``load_inline``/``load`` call of the candidate, resolved to a spec or left with its reason."""
    found = FoundCalls()
    try:
        tree = ast.parse(candidate_source)
    except SyntaxError:
        return found
    functions, modules = _callee_kinds(tree)
    rebound = {name for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
    module_scope = _Scope(_assignments(tree.body), None, rebound)
    for call, stack in _enclosing_functions(tree).items():
        kind = _kind(call.func, functions, modules)
        if kind is None:
            continue
        scope = module_scope
        for function in stack:
            arguments = [a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)]
            arguments += [a.arg for a in (function.args.vararg, function.args.kwarg) if a is not None]
            scope = _Scope(_assignments(function.body), scope, rebound, frozenset(arguments))
        try:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                raise _Unresolved("* or ** arguments")
            args = tuple(scope.evaluate(a) for a in call.args)
            kwargs = {k.arg: scope.evaluate(k.value) for k in call.keywords if k.arg is not None}
            bound_args = bind_arguments(kind, args, kwargs)
            spec = spec_from_arguments(kind, {k: _plain(v) for k, v in bound_args.items()}, base_dir)
        except (_Unresolved, Unsupported, TypeError) as exc:
            found.unresolved.append(UnresolvedCall(call.lineno, str(exc)))
            continue
        spec.line = call.lineno
        for field_name in ("cpp_sources", "cuda_sources"):
            value = bound_args.get(field_name)
            first = value[0] if isinstance(value, list) and len(value) == 1 else value
            if isinstance(first, Text) and first.line is not None:
                spec.source_lines[field_name] = first.line
        found.specs.append(spec)
    found.specs.sort(key=lambda s: s.line or 0)
    return found
