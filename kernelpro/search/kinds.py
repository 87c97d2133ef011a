"""What kind of code a variant is, read from its source: the reference, plain PyTorch, or a kernel backend."""

from __future__ import annotations

import re
from typing import Literal

Kind = Literal["reference", "pytorch", "nvrtc", "cubin", "triton", "cute_dsl", "load_inline"]

# Checked in this order: a candidate that launches a CuTe DSL kernel may also import torch, and so on.
_MARKERS: list[tuple[Kind, re.Pattern[str]]] = [
    ("cute_dsl", re.compile(r"^\s*(from\s+cutlass(\.cute)?\s+import|import\s+cutlass\b)", re.MULTILINE)),
    ("load_inline", re.compile(r"\bload_inline\b|torch\.utils\.cpp_extension")),
    ("cubin", re.compile(r"\bCubinKernel\b|\bbackend\s*=\s*['\"]nvcc['\"]")),
    ("nvrtc", re.compile(r"\bCudaKernel\b")),
    # A kernel, not merely an import (candidates import triton optionally).
    ("triton", re.compile(r"@triton\.(jit|autotune)\b|\btriton\.language\b|from\s+triton\s+import\s+jit\b")),
]
_MODEL_NEW = re.compile(r"^class\s+ModelNew\b", re.MULTILINE)
_REFERENCE = re.compile(r"^class\s+Model\b", re.MULTILINE)


def detect_kind(source: str) -> Kind:
    """The variant's kind: ``reference`` for a KernelBench problem, else the backend its ``ModelNew`` uses."""
    if _REFERENCE.search(source) and not _MODEL_NEW.search(source):
        return "reference"
    for kind, pattern in _MARKERS:
        if pattern.search(source):
            return kind
    return "pytorch"
