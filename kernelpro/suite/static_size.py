"""A problem's size read from its source, never run: the bytes ``get_inputs`` makes, and a relative weight.

``--overnight`` orders problems by what they will cost before any is run. Where nothing was measured of a problem,
its source says enough to rank it: its KernelBench level and the tensors ``get_inputs`` creates. Those are read
from the syntax tree alone: module-level constants (``batch_size = 16``, ``dim = 16384 * 4``) and, inside
``get_inputs``, the calls that make tensors (``torch.randn(batch_size, dim)``, ``torch.randint(0, 10, (n,))``)
whose shapes those constants give. Running ``get_inputs`` instead (on the CPU or the meta device) would run a
problem's code outside the judge's sandbox, import torch in the planner and, for level 3, allocate its inputs for
every problem of the suite before the first is judged: seconds to minutes for a plan meant to take none.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

from kernelpro.problem import ProblemError, read_source_file

MAKERS = {"randn", "rand", "randint", "zeros", "ones", "empty", "full", "normal"}
DTYPE_BYTES = {"float16": 2, "half": 2, "bfloat16": 2, "float64": 8, "double": 8, "int64": 8, "long": 8,
               "int32": 4, "int": 4, "int8": 1, "uint8": 1, "bool": 1}
OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
             ast.Div: operator.truediv, ast.Mod: operator.mod}
LARGEST = 1 << 50  # a size past any GPU's memory: beyond it a constant is not a shape


def _value(node: ast.AST, known: dict[str, Any]) -> Any:
    """The value of a constant expression over ``known`` names, or None where it is not one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_value(item, known) for item in node.elts]
        return None if any(item is None for item in items) else tuple(items)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _value(node.operand, known)
        return -inner if isinstance(inner, (int, float)) else None
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, known), _value(node.right, known)
        if not isinstance(left, (int, float)) or not isinstance(right, (int, float)):
            return None
        if isinstance(node.op, ast.Pow):
            return left ** right if abs(right) <= 64 and abs(left) < LARGEST else None
        try:
            result = OPERATORS[type(node.op)](left, right) if type(node.op) in OPERATORS else None
        except ZeroDivisionError:
            return None
        return result if result is None or abs(result) < LARGEST else None
    return None


def _bind(statements: list[ast.stmt], known: dict[str, Any]) -> None:
    """Add the plain ``name = constant expression`` assignments among ``statements`` to ``known``, in order."""
    for statement in statements:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            value = _value(statement.value, known)
            if value is not None:
                known[statement.targets[0].id] = value
            else:
                known.pop(statement.targets[0].id, None)


def _maker(call: ast.Call) -> str | None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name if name in MAKERS else None


def _shape(call: ast.Call, maker: str, known: dict[str, Any]) -> tuple | None:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    if "size" in keywords:
        node = keywords["size"]
    elif maker == "randint":  # randint(high, size) or randint(low, high, size)
        node = call.args[-1] if len(call.args) >= 2 else None
    elif maker in ("full", "normal"):
        node = call.args[0] if maker == "full" and call.args else call.args[2] if len(call.args) >= 3 else None
    else:
        node = call.args[0] if len(call.args) == 1 else ast.Tuple(elts=list(call.args)) if call.args else None
    value = None if node is None else _value(node, known)
    if isinstance(value, (int, float)):
        value = (value,)
    if not isinstance(value, tuple) or not all(isinstance(d, int) and d >= 0 for d in value):
        return None
    return value


def _bytes_each(call: ast.Call) -> int:
    dtype = next((k.value for k in call.keywords if k.arg == "dtype"), None)
    name = dtype.attr if isinstance(dtype, ast.Attribute) else dtype.id if isinstance(dtype, ast.Name) else ""
    return DTYPE_BYTES.get(name, 8 if _maker(call) == "randint" and dtype is None else 4)


def input_bytes(source: str) -> int | None:
    """The bytes of the tensors ``get_inputs`` makes, as far as its shapes can be read; None where none can."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    known: dict[str, Any] = {}
    _bind(tree.body, known)
    function = next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "get_inputs"),
                    None)
    if function is None:
        return None
    _bind(function.body, known)
    sizes = []
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and (maker := _maker(node)) is not None:
            shape = _shape(node, maker, known)
            if shape is not None:
                sizes.append(math.prod(shape) * _bytes_each(node))
    return sum(sizes) if sizes else None


def level_weight(level: int | None, weights: dict[int, float]) -> float:
    """How much costlier a problem of ``level`` is than one of level 1 (``suite.overnight_level_weights``): a
    level not listed, or a problem without one, counts as the highest level listed."""
    if level in weights:
        return weights[level]
    return weights[max(weights)] if weights else 1.0


def static_weight(path: str, level: int | None, weights: dict[int, float]) -> tuple[float, int | None]:
    """A problem's relative cost from its source alone, and the input bytes it was read from (None where its
    shapes could not be read): its level's weight times 1 + log10(1 + its inputs in MiB), so a problem ten times
    larger weighs one step more and an unreadable one counts as its level's smallest."""
    try:
        size = input_bytes(read_source_file(path))
    except ProblemError:
        size = None
    factor = 1.0 if size is None else 1.0 + math.log10(1.0 + size / 2**20)
    return level_weight(level, weights) * factor, size
