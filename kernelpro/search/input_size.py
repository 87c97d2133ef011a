"""How many bytes one call's inputs take, read from a problem's source without running it.

KernelBench problems size their inputs with module-level constants (``batch_size = 4096``) and draw them in
``get_inputs`` with torch's factories (``torch.randn(batch_size, dim)``). This evaluates exactly that much:
integer constants, arithmetic on them, and the shapes and dtypes of the factory calls. Anything else (a loop,
numpy, a helper function) makes the size unknown: None, never a guess.
"""

from __future__ import annotations

import ast
import math
import operator

FACTORIES = {"randn", "rand", "randint", "zeros", "ones", "empty", "full", "normal"}
ELEMENT_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8, "double": 8,
                 "int64": 8, "long": 8, "int32": 4, "int": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
              ast.Pow: operator.pow, ast.Mod: operator.mod}


Names = dict[str, "int | tuple[int, ...]"]


class _Unknown(Exception):
    pass


def input_bytes(source: str) -> int | None:
    """Bytes of the tensors ``get_inputs()`` returns, or None where the source does not say plainly."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    constants: Names = {}
    get_inputs = None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            _bind(node, constants)
        elif isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            get_inputs = node
    if get_inputs is None:
        return None
    local = dict(constants)
    try:
        for statement in get_inputs.body:
            if isinstance(statement, ast.Assign) and not _factory_calls(statement.value):
                _bind(statement, local)
        calls = [call for statement in get_inputs.body for call in _factory_calls(statement)]
        if not calls or _has_loop(get_inputs):
            return None
        return sum(_call_bytes(call, local) for call in calls)
    except _Unknown:
        return None


def _bind(node: ast.Assign, names: Names) -> None:
    """Record the integers and integer tuples an assignment binds (also ``a = b = 1``, ``a, b = 1, 2``); a name
    bound to anything else is forgotten, so a shape that uses it is unknown."""
    for name, value in (pair for target in node.targets for pair in _pairs(target, node.value)):
        try:
            names[name] = _constant(value, names)
        except _Unknown:
            names.pop(name, None)


def _pairs(target: ast.expr, value: ast.expr) -> list[tuple[str, ast.expr]]:
    """``name = value`` and ``a, b = 1, 2`` as (name, value) pairs; other targets give none."""
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return [pair for t, v in zip(target.elts, value.elts, strict=True) for pair in _pairs(t, v)]
    return []


def _factory_calls(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr in FACTORIES and isinstance(n.func.value, ast.Name) and n.func.value.id == "torch"]


def _has_loop(function: ast.FunctionDef) -> bool:
    return any(isinstance(n, (ast.For, ast.While, ast.comprehension)) for n in ast.walk(function))


def _call_bytes(call: ast.Call, names: Names) -> int:
    factory = call.func.attr  # type: ignore[attr-defined]
    args = list(call.args)
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    if factory == "randint":  # randint(high, size) or randint(low, high, size)
        shape_nodes = [keywords["size"]] if "size" in keywords else args[-1:]
        default = "int64"
    elif factory in ("full", "normal"):
        shape_nodes = [keywords.get("size", args[0] if args else None)]
        default = "float32"
    else:
        shape_nodes = [keywords["size"]] if "size" in keywords else args
        default = "float32"
    if not shape_nodes or shape_nodes[0] is None:
        raise _Unknown
    dims = _shape(shape_nodes, names)
    return math.prod(dims) * _element_bytes(keywords.get("dtype"), default)


def _shape(nodes: list[ast.expr], names: Names) -> list[int]:
    """``(2, 3)``, ``2, 3``, ``shape`` (a tuple constant) or ``n, *shape``, as a list of sizes."""
    if len(nodes) == 1 and not isinstance(nodes[0], ast.Starred):
        one = _constant(nodes[0], names)
        return list(one) if isinstance(one, tuple) else [one]
    dims: list[int] = []
    for node in nodes:
        value = _constant(node.value if isinstance(node, ast.Starred) else node, names)
        if isinstance(node, ast.Starred) != isinstance(value, tuple):
            raise _Unknown
        dims.extend(value if isinstance(value, tuple) else [value])
    return dims


def _constant(node: ast.expr, names: Names) -> int | tuple[int, ...]:
    """An integer, or a tuple or list of integers."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_integer(n, names) for n in node.elts)
    if isinstance(node, ast.Name) and isinstance(names.get(node.id), tuple):
        return names[node.id]
    return _integer(node, names)


def _element_bytes(dtype: ast.expr | None, default: str) -> int:
    if dtype is None:
        return ELEMENT_BYTES[default]
    if isinstance(dtype, ast.Attribute) and dtype.attr in ELEMENT_BYTES:
        return ELEMENT_BYTES[dtype.attr]
    raise _Unknown


def _integer(node: ast.expr, names: Names) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and isinstance(names.get(node.id), int):
        return names[node.id]  # type: ignore[return-value]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        value = _OPERATORS[type(node.op)](_integer(node.left, names), _integer(node.right, names))
        if isinstance(value, int) and 0 <= value < 1 << 48:
            return value
    raise _Unknown
