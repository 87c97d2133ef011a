"""A kernel's parameters, read from its ``__global__`` declaration, and Python values packed to match them.

Packing follows the declared C type, never the Python type: ``2.5`` for a ``float`` parameter becomes four
bytes of a C float (a launcher that sends it as a double hands the kernel garbage), ``3`` for a ``float``
becomes ``3.0f``, and a fractional value for an integer parameter is an error rather than a truncation.
"""

from __future__ import annotations

import operator
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# Normalised C type -> struct format; "bf16" has no struct code and is converted by hand.
SCALARS: dict[str, str] = {
    "float": "f", "double": "d", "bool": "?",
    "int": "i", "signed": "i", "signed int": "i", "int32_t": "i",
    "unsigned": "I", "unsigned int": "I", "uint32_t": "I",
    "long": "q", "long int": "q", "long long": "q", "long long int": "q", "int64_t": "q", "ptrdiff_t": "q",
    "intptr_t": "q", "unsigned long": "Q", "unsigned long int": "Q", "unsigned long long": "Q",
    "unsigned long long int": "Q", "uint64_t": "Q", "size_t": "Q", "uintptr_t": "Q",
    "short": "h", "int16_t": "h", "unsigned short": "H", "uint16_t": "H",
    "char": "b", "signed char": "b", "int8_t": "b", "unsigned char": "B", "uint8_t": "B",
    "__half": "e", "half": "e", "__nv_bfloat16": "bf16", "nv_bfloat16": "bf16",
}
QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "__grid_constant__", "struct", "class",
              "typename"}
TYPE_WORDS = {"int", "float", "double", "char", "short", "long", "unsigned", "signed", "bool", "void"}


class SignatureError(ValueError):
    """The kernel's declaration could not be found or read."""


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its base C type, whether it is a pointer, and its declaration as written."""

    ctype: str
    pointer: bool
    name: str
    text: str

    @property
    def element_size(self) -> int | None:
        """Bytes per element a pointer parameter points to; None for ``void``/byte/unknown pointees."""
        fmt = SCALARS.get(self.ctype)
        if fmt is None:
            return None
        size = 2 if fmt == "bf16" else struct.calcsize(fmt)
        return size if size > 1 else None


@dataclass(frozen=True)
class KernelSignature:
    """A kernel's name and parameters."""

    name: str
    params: tuple[Param, ...]

    def __str__(self) -> str:
        return f"{self.name}({', '.join(p.text for p in self.params)})"


def _strip_comments(source: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.DOTALL)


def split_top_level(text: str) -> list[str]:
    """Split on commas outside (), <>, [] and {}."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_param(text: str, substitutions: dict[str, str] | None = None) -> Param:
    """``const float* __restrict__ x`` -> Param(ctype="float", pointer=True, name="x")."""
    decl = re.sub(r"__attribute__\s*\(\(.*?\)\)|alignas\s*\([^)]*\)", " ", text.split("=", 1)[0])
    for name, value in (substitutions or {}).items():
        decl = re.sub(rf"\b{re.escape(name)}\b", value, decl)
    pointer = "*" in decl or "[" in decl  # an array parameter is a pointer
    decl = re.sub(r"\[[^\]]*\]", " ", decl)
    tokens = [t for t in re.split(r"[\s*&]+", decl) if t and t not in QUALIFIERS]
    name = ""
    if len(tokens) >= 2 and tokens[-1] not in TYPE_WORDS:
        name = tokens.pop()
    ctype = " ".join(tokens).removeprefix("::").removeprefix("std::")
    return Param(ctype=ctype, pointer=pointer, name=name, text=" ".join(text.split()))


def _template_substitutions(head: str, name: str) -> dict[str, str]:
    """``template <typename T, int N>`` before a kernel and ``k<float, 4>`` -> {"T": "float", "N": "4"}."""
    template = re.search(r"template\s*<(?P<params>[^{};]*)>\s*(?:extern\s*\"C\"\s*)?$", head)
    if template is None or "<" not in name:
        return {}
    args = split_top_level(name[name.index("<") + 1: name.rindex(">")])
    names = [p.split("=")[0].split()[-1] for p in split_top_level(template["params"])]
    return dict(zip(names, args, strict=False))  # trailing template parameters may have defaults


def parse_signature(source: str, name: str) -> KernelSignature:
    """The parameters of the ``__global__`` function ``name`` (or a name expression like ``k<float>``)."""
    text = _strip_comments(source)
    base = name.split("<", 1)[0].strip().rsplit("::", 1)[-1]
    for glob in re.finditer(r"\b__global__\b", text):
        tail = text[glob.end():]
        call = re.search(rf"\b{re.escape(base)}\s*\(", tail)
        if call is None or re.search(r"[;{}]", tail[: call.start()]):
            continue
        depth, start = 0, glob.end() + call.end()
        for i in range(start, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth < 0:
                params_text = text[start:i]
                break
        else:
            raise SignatureError(f"unbalanced parentheses in the declaration of {base}")
        head = text[max(0, glob.start() - 400): glob.start()]
        subs = _template_substitutions(head, name)
        parts = split_top_level(params_text)
        params = [] if parts in ([], ["void"]) else [parse_param(p, subs) for p in parts]
        return KernelSignature(name=name, params=tuple(params))
    raise SignatureError(f'no __global__ function named "{base}" in the source')


def parse_param_list(name: str, params_text: str) -> KernelSignature:
    """A signature from a parameter list written out, e.g. ``"const float* x, float* y, int n"``."""
    parts = split_top_level(params_text)
    return KernelSignature(name=name, params=tuple(parse_param(p) for p in parts if p != "void"))


def _bf16(value: float) -> bytes:
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if (bits & 0x7F800000) != 0x7F800000:  # round to nearest even, except inf/nan
        bits += 0x7FFF + ((bits >> 16) & 1)
    return struct.pack("<H", (bits >> 16) & 0xFFFF)


def pack_value(param: Param, value: Any) -> bytes:
    """The bytes of ``value`` as ``param``'s C type (pointers: an int address or None)."""
    if param.pointer:
        if value is None:
            return struct.pack("<Q", 0)
        return struct.pack("<Q", operator.index(value))
    if hasattr(value, "data_ptr"):
        raise TypeError(f"parameter '{param.text}' is passed by value: give a Python number (.item()), not a tensor")
    fmt = SCALARS.get(param.ctype)
    if fmt is None:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
        raise TypeError(f"parameter '{param.text}' has type {param.ctype!r}, passed by value: give its raw bytes")
    if fmt in "fde" or fmt == "bf16":
        if not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
            raise TypeError(f"parameter '{param.text}' takes a number, got {type(value).__name__}")
        number = float(value)
        return _bf16(number) if fmt == "bf16" else struct.pack("<" + fmt, number)
    if fmt == "?":
        return struct.pack("<?", bool(value))
    try:
        integer = operator.index(value)
    except TypeError:
        raise TypeError(f"parameter '{param.text}' takes an integer, got {type(value).__name__} {value!r}") from None
    try:
        return struct.pack("<" + fmt, integer)
    except struct.error:
        raise OverflowError(f"{integer} does not fit parameter '{param.text}'") from None


def pack_args(signature: KernelSignature, args: Sequence[Any],
              pointer_of: Callable[[Param, Any], int] | None = None) -> list[bytes]:
    """Every argument packed for the kernel. ``pointer_of`` turns a tensor (anything but an int or None
    for a pointer parameter) into a device address, checking it on the way."""
    if len(args) != len(signature.params):
        raise TypeError(f"{signature.name} takes {len(signature.params)} argument(s), got {len(args)}: {signature}")
    packed = []
    for param, value in zip(signature.params, args, strict=True):
        if param.pointer and value is not None and not isinstance(value, int):
            if pointer_of is None:
                raise TypeError(f"parameter '{param.text}' takes a device pointer, got {type(value).__name__}")
            value = pointer_of(param, value)
        packed.append(pack_value(param, value))
    return packed
