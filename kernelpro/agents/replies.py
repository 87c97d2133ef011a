"""Reading a model's plain-text reply: fenced blocks, forgiving JSON, tool calls, code references, the answer.

Models write JSON loosely: prose around it, several blocks, trailing commas, single quotes, Python's
``True``/``None``, no fence at all, or a fence left open at the end. All of these are read; what still cannot be
used raises ``ReplyError`` with a message precise enough to quote back to the model.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

TOOL_TAGS = ("tool", "tool_call", "tool-call")
JSON_TAGS = ("json", "json5", "jsonc")
LANGUAGE_ALIASES = {"py": "python", "python3": "python", "cu": "cuda", "c++": "cpp", "cxx": "cpp", "cc": "cpp"}
REFERENCE = re.compile(r"^@([A-Za-z][\w+#-]*):(\d+)$")
_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)")


class ReplyError(ValueError):
    """A reply that cannot be used, with the reason to send back to the model."""


@dataclass
class Block:
    lang: str
    text: str
    first_line: int
    last_line: int
    closed: bool


@dataclass
class ToolRequest:
    name: str
    args: dict[str, Any]


def _language(tag: str) -> str:
    tag = tag.lower()
    return LANGUAGE_ALIASES.get(tag, tag)


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block (``` or ~~~, three or more), in order; a fence left open runs to the end."""
    lines, blocks, i = text.splitlines(), [], 0
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, start = opening.group(1), i
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        i += 1
        while i < len(lines) and not closing.match(lines[i]):
            i += 1
        closed = i < len(lines)
        blocks.append(Block(_language(opening.group(2)), "\n".join(lines[start + 1:i]), start, i, closed))
        i += 1
    return blocks


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ValueError("** in an object")
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Name) and node.id in ("true", "false", "null", "True", "False", "None"):
        return {"true": True, "True": True, "false": False, "False": False}.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # "a" "b" and "a" + "b" string joins
        left, right = _literal(node.left), _literal(node.right)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    raise ValueError(f"not a JSON value: {ast.dump(node)[:80]}")


def loads_lenient(text: str) -> Any:
    """JSON, or failing that a JSON-like literal (single quotes, trailing commas, True/None, comments with #)."""
    text = text.strip().lstrip("\ufeff")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        strict_error = error
    try:
        return _literal(ast.parse(text, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError):
        pass
    raise ReplyError(f"invalid JSON: {strict_error.msg} at line {strict_error.lineno} column {strict_error.colno}")


def _balanced_objects(text: str) -> list[str]:
    """Top-level ``{...}`` spans of ``text``, skipping braces inside quoted strings."""
    spans, depth, start, quote, i = [], 0, 0, "", 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "\"'" and depth:
            quote = char
        elif char == "{":
            start = i if depth == 0 else start
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start:i + 1])
        i += 1
    return spans


def _prose(text: str, blocks: list[Block]) -> str:
    inside = {n for b in blocks for n in range(b.first_line, b.last_line + 1)}
    return "\n".join(line for n, line in enumerate(text.splitlines()) if n not in inside)


def resolve_references(value: Any, blocks: list[Block]) -> Any:
    """Replace strings such as ``"@python:1"`` (the first python block) with that block's text, at any depth."""
    if isinstance(value, dict):
        return {key: resolve_references(item, blocks) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve_references(item, blocks) for item in value]
    match = REFERENCE.match(value.strip()) if isinstance(value, str) else None
    if not match:
        return value
    lang, number = _language(match.group(1)), int(match.group(2))
    same = [b for b in blocks if b.lang == lang]
    if not 1 <= number <= len(same):
        raise ReplyError(f"{value.strip()!r} refers to ```{lang} block number {number}, but the reply has "
                         f"{len(same)} ```{lang} block{'s' if len(same) != 1 else ''}")
    return same[number - 1].text


def tool_requests(blocks: list[Block]) -> list[ToolRequest]:
    """The tool calls of a reply: one ```tool block each, ``{"name": ..., "args": {...}}``."""
    requests = []
    for block in (b for b in blocks if b.lang in TOOL_TAGS):
        try:
            call = loads_lenient(block.text)
        except ReplyError as error:
            raise ReplyError(f"a ```tool block could not be read: {error}") from None
        args = call.get("args", call.get("arguments", {})) if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not isinstance(args, dict):
            raise ReplyError('a ```tool block must hold one JSON object {"name": "<tool>", "args": {...}}; got '
                             f"{block.text.strip()[:200]!r}")
        requests.append(ToolRequest(call["name"], resolve_references(args, blocks)))
    return requests


def describe_validation_error(error: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(the object)'}: {e['msg']}" for e in error.errors())


def parse_answer(text: str, output: type[T], blocks: list[Block] | None = None) -> T:
    """The final answer: the last ```json block (then unlabelled block, then bare object) that fits ``output``."""
    blocks = fenced_blocks(text) if blocks is None else blocks
    groups = [[b.text for b in blocks if b.lang in JSON_TAGS], [b.text for b in blocks if not b.lang],
              _balanced_objects(_prose(text, blocks))]
    first_error: ReplyError | None = None
    for group in groups:
        for candidate in reversed(group):
            try:
                value = loads_lenient(candidate)
                if not isinstance(value, dict):
                    raise ReplyError(f"the answer must be a JSON object, not {type(value).__name__}")
                return output.model_validate(resolve_references(value, blocks))
            except ValidationError as error:
                first_error = first_error or ReplyError(
                    f"the answer does not match the schema: {describe_validation_error(error)}")
            except ReplyError as error:
                first_error = first_error or error
    raise first_error or ReplyError("no final answer found: give it as one ```json block holding a JSON object")


__all__ = ["Block", "ReplyError", "ToolRequest", "describe_validation_error", "fenced_blocks", "loads_lenient",
           "parse_answer", "resolve_references", "tool_requests"]
