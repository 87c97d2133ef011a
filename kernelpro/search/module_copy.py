"""A module's code with one class renamed, ready to be wrapped by a generated ``ModelNew``.

The judge rejects any use of the name ``Model`` in a candidate, so a recipe that reuses the reference's
computation carries a copy of its code under another name. Edits are made in place on the text (comments and
layout survive); ``get_inputs``/``get_init_inputs`` are dropped, since a candidate needs neither.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

DROPPED_FUNCTIONS = ("get_inputs", "get_init_inputs")


class CopyError(ValueError):
    """The source cannot be copied and wrapped (not Python, or no such class)."""


@dataclass(frozen=True)
class ClassCopy:
    """The renamed module code, the class's new name and how to build it with the same arguments."""

    code: str
    class_name: str
    init_parameters: str
    """``__init__``'s parameters without ``self``, as written (defaults included): ``in_features, out_features``."""
    init_arguments: str
    """The call that forwards those parameters: ``in_features, out_features``."""


def _free_name(tree: ast.Module, wanted: str) -> str:
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    taken |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))}
    name = wanted
    while name in taken:
        name += "_"
    return name


def _init_signature(cls: ast.ClassDef) -> tuple[str, str]:
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return "", ""
    args = init.args
    params = ast.unparse(ast.arguments(posonlyargs=[], args=args.posonlyargs + args.args, vararg=args.vararg,
                                       kwonlyargs=args.kwonlyargs, kw_defaults=args.kw_defaults,
                                       kwarg=args.kwarg, defaults=args.defaults))
    params = params.split(",", 1)[1].strip() if "," in params else ""  # drop self
    positional = [a.arg for a in (args.posonlyargs + args.args)[1:]]
    call = positional + ([f"*{args.vararg.arg}"] if args.vararg else [])
    call += [f"{a.arg}={a.arg}" for a in args.kwonlyargs] + ([f"**{args.kwarg.arg}"] if args.kwarg else [])
    return params, ", ".join(call)


def copy_class(source: str, class_name: str, new_name: str) -> ClassCopy:
    """``source`` with ``class class_name`` and every plain reference to it renamed to ``new_name`` (or a
    variant of it that the module does not already use)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise CopyError(f"not valid Python: line {exc.lineno}: {exc.msg}") from None
    cls = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == class_name), None)
    if cls is None:
        raise CopyError(f"no top-level class {class_name}")
    new_name = _free_name(tree, new_name)
    lines = source.splitlines(keepends=True)
    encoded = [line.encode("utf-8") for line in lines]  # AST columns count UTF-8 bytes

    # (line index, start byte, end byte, replacement), applied right to left so earlier offsets stay valid.
    edits: list[tuple[int, int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == class_name:
            edits.append((node.lineno - 1, node.col_offset, node.end_col_offset or 0, new_name))
    header = encoded[cls.lineno - 1]
    start = header.index(b"class", cls.col_offset) + len(b"class")
    start = header.index(class_name.encode(), start)
    edits.append((cls.lineno - 1, start, start + len(class_name.encode()), new_name))
    for index, begin, end, text in sorted(edits, reverse=True):
        encoded[index] = encoded[index][:begin] + text.encode() + encoded[index][end:]

    dropped: set[int] = set()
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef) and statement.name in DROPPED_FUNCTIONS:
            first = min([statement.lineno] + [d.lineno for d in statement.decorator_list])
            dropped.update(range(first - 1, statement.end_lineno or statement.lineno))
    code = "".join(line.decode("utf-8") for i, line in enumerate(encoded) if i not in dropped)
    params, call = _init_signature(cls)
    return ClassCopy(code=code.rstrip() + "\n", class_name=new_name, init_parameters=params, init_arguments=call)
