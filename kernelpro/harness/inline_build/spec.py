"""One ``load_inline``/``load`` call's arguments, normalised the way torch reads them, and its cache key.

The key covers what changes the built library: the sources (for ``load``, the files' contents), the module
name (it is the library's ``PyInit_`` symbol), the functions bound, every flag and include path, and the
build's environment: torch's and CUDA's versions, nvcc's, the host compiler's, Python's ABI and the target
architectures. ``verbose``, ``build_directory``, ``keep_intermediates`` and ``use_pch`` change how it is built,
not what, and are left out.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

KEY_FORMAT = 1

# load_inline's and load's parameters, in torch's order (positional calls are mapped through these).
INLINE_PARAMETERS = ("name", "cpp_sources", "cuda_sources", "sycl_sources", "functions", "extra_cflags",
                     "extra_cuda_cflags", "extra_sycl_cflags", "extra_ldflags", "extra_include_paths",
                     "build_directory", "verbose", "with_cuda", "with_sycl", "is_python_module",
                     "with_pytorch_error_handling", "keep_intermediates", "use_pch", "no_implicit_headers")
LOAD_PARAMETERS = ("name", "sources", "extra_cflags", "extra_cuda_cflags", "extra_sycl_cflags", "extra_ldflags",
                   "extra_include_paths", "build_directory", "verbose", "with_cuda", "with_sycl",
                   "is_python_module", "is_standalone", "keep_intermediates")
# How a call is built, never what: not part of the key, and the builder sets them itself.
BUILD_ONLY = {"build_directory", "verbose", "keep_intermediates", "use_pch"}


class Unsupported(ValueError):
    """A call the cache cannot stand in for (SYCL, a non-Python module, a standalone executable): torch builds
    it in the worker as usual."""


class InlineSpec(BaseModel):
    """What one call builds. ``sources`` are ``load``'s files (path and contents), ``cpp``/``cuda`` the strings
    ``load_inline`` writes to ``main.cpp`` and ``cuda.cu``."""

    kind: Literal["inline", "load"] = "inline"
    name: str
    cpp_sources: list[str] = Field(default_factory=list)
    cuda_sources: list[str] = Field(default_factory=list)
    sources: list[tuple[str, str]] = Field(default_factory=list)
    functions: dict[str, str] | None = None
    extra_cflags: list[str] = Field(default_factory=list)
    extra_cuda_cflags: list[str] = Field(default_factory=list)
    extra_ldflags: list[str] = Field(default_factory=list)
    extra_include_paths: list[str] = Field(default_factory=list)
    with_cuda: bool | None = None
    with_pytorch_error_handling: bool = True
    no_implicit_headers: bool = False
    line: int | None = None
    """The call's line in the candidate (not in the key)."""
    source_lines: dict[str, int] = Field(default_factory=dict)
    """Where each source string starts in the candidate's file, by ``cpp_sources``/``cuda_sources`` (not in the
    key): build errors point there."""

    def key_fields(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude={"line", "source_lines"})

    def load_arguments(self) -> dict[str, Any]:
        """Keyword arguments for torch's own ``load_inline``/``load`` that build exactly this."""
        common = {"name": self.name, "extra_cflags": self.extra_cflags or None,
                  "extra_cuda_cflags": self.extra_cuda_cflags or None, "extra_ldflags": self.extra_ldflags or None,
                  "extra_include_paths": self.extra_include_paths or None, "with_cuda": self.with_cuda}
        if self.kind == "load":
            return {**common, "sources": [path for path, _ in self.sources]}
        return {**common, "cpp_sources": list(self.cpp_sources), "cuda_sources": list(self.cuda_sources) or None,
                "functions": dict(self.functions) if self.functions is not None else None,
                "with_pytorch_error_handling": self.with_pytorch_error_handling,
                "no_implicit_headers": self.no_implicit_headers}


def _strings(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise TypeError(f"{what} must be a string or a list of strings, not {type(value).__name__}")


def _functions(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {value: value}
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return {f: f for f in value}
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return dict(value)
    raise TypeError(f"functions must be a string, a list or a dict of strings, not {type(value).__name__}")


def bind_arguments(kind: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A call's positional and keyword arguments by parameter name, as Python would bind them."""
    names = INLINE_PARAMETERS if kind == "inline" else LOAD_PARAMETERS
    if len(args) > len(names):
        raise TypeError(f"too many positional arguments ({len(args)})")
    bound = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"unexpected keyword argument {key!r}")
        if key in bound:
            raise TypeError(f"multiple values for argument {key!r}")
        bound[key] = value
    return bound


def spec_from_arguments(kind: str, bound: dict[str, Any], base_dir: Path | None = None) -> InlineSpec:
    """The spec of a call with these arguments; ``Unsupported`` for what the cache cannot stand in for, and
    ``TypeError`` for arguments torch itself would refuse."""
    if "name" not in bound or not isinstance(bound["name"], str):
        raise TypeError("name must be a string")
    if bound.get("sycl_sources") or bound.get("with_sycl") or bound.get("extra_sycl_cflags"):
        raise Unsupported("SYCL sources")
    if bound.get("is_python_module", True) is not True:
        raise Unsupported("is_python_module=False (a library of torch ops, loaded with torch.ops.load_library)")
    if bound.get("is_standalone", False):
        raise Unsupported("is_standalone=True (an executable)")
    with_cuda = bound.get("with_cuda")
    fields: dict[str, Any] = {
        "kind": kind, "name": bound["name"],
        "extra_cflags": _strings(bound.get("extra_cflags"), "extra_cflags"),
        "extra_cuda_cflags": _strings(bound.get("extra_cuda_cflags"), "extra_cuda_cflags"),
        "extra_ldflags": _strings(bound.get("extra_ldflags"), "extra_ldflags"),
        "extra_include_paths": _strings(bound.get("extra_include_paths"), "extra_include_paths"),
        "with_cuda": None if with_cuda is None else bool(with_cuda)}
    for name in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags"):
        if flag := next((f for f in fields[name] if runs_a_program(f)), None):
            raise Unsupported(f"{name} has {flag!r}, which makes the compiler run or load a program of the "
                              "candidate's choosing: it is built inside the worker's walls")
    if kind == "load":
        paths = _strings(bound.get("sources"), "sources")
        if not paths:
            raise TypeError("load() needs sources")
        if base_dir is None:  # the judge's own process: it opens no path a candidate names (/proc/self/environ)
            raise Unsupported("load() names source files, which the judge never opens: built in the worker")
        files = []
        for path in paths:
            full = Path(path) if Path(path).is_absolute() or base_dir is None else base_dir / path
            try:
                files.append((str(full), full.read_text(encoding="utf-8", errors="replace")))
            except OSError as exc:
                raise Unsupported(f"source file {path} cannot be read here ({exc.strerror})") from None
        fields["sources"] = files
    else:
        if "cpp_sources" not in bound:
            raise TypeError("load_inline() needs cpp_sources")
        fields |= {"cpp_sources": _strings(bound["cpp_sources"], "cpp_sources"),
                   "cuda_sources": _strings(bound.get("cuda_sources"), "cuda_sources"),
                   "functions": _functions(bound.get("functions")),
                   "with_pytorch_error_handling": bool(bound.get("with_pytorch_error_handling", True)),
                   "no_implicit_headers": bool(bound.get("no_implicit_headers", False))}
    return InlineSpec(**fields)


# Compiler and linker flags that run or load another program (a plugin, a wrapper, another compiler or
# linker, a specs or response file of flags): a pool build runs outside the worker's walls, so a call with one
# is left to the worker.
_PROGRAM_FLAGS = ("-fplugin", "-wrapper", "-B", "-specs", "--specs", "-ccbin", "--compiler-bindir", "-load",
                  "-plugin", "--plugin", "-fuse-ld=/", "-iplugindir", "@", "-Xclang", "--use-local-env",
                  "--options-file", "-optf", "--dryrun")


def runs_a_program(flag: str) -> bool:
    """Whether ``flag`` (or a flag passed through ``-Xcompiler``, ``-Wl,`` or ``-Xlinker``) is one of those."""
    parts = [p for chunk in flag.replace("-Wl,", ",").replace("-Xcompiler", ",").replace("-Xlinker", ",").split(",")
             for p in chunk.split() if p]
    return any(p.lstrip("=").startswith(_PROGRAM_FLAGS) and p not in _LINKER_B_FLAGS for p in parts) or "=@" in flag


_LINKER_B_FLAGS = {"-Bsymbolic", "-Bsymbolic-functions", "-Bstatic", "-Bdynamic", "-Bshareable", "-Bgroup"}


def arch_list_for(arch: str) -> str:
    """``TORCH_CUDA_ARCH_LIST`` for a target such as ``sm_90a``: ``9.0``, torch's own spelling of what the GPU
    is (without ``+PTX``: the binary runs only where it was built, on this GPU)."""
    digits = arch.removeprefix("sm_").removeprefix("compute_").rstrip("af")
    return f"{digits[:-1]}.{digits[-1]}" if len(digits) >= 2 and digits.isdigit() else arch


@functools.lru_cache(maxsize=4)
def _tool_version(executable: str) -> str:
    """``EXECUTABLE --version``'s whole output (its identity), or ``missing``."""
    try:
        out = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "missing"
    return (out.stdout + out.stderr).strip()


def build_environment(arch_list: str, lean_headers: bool = False) -> dict[str, str]:
    """What, besides the call itself, decides the built library: the same on the judge and in its workers."""
    import torch
    from torch.utils import cpp_extension

    cuda_home = cpp_extension.CUDA_HOME
    nvcc = os.path.join(cuda_home, "bin", "nvcc") if cuda_home else "nvcc"
    compiler = getattr(cpp_extension, "get_cxx_compiler", lambda: "c++")()  # torch's choice (CXX, else c++)
    return {"torch": torch.__version__, "torch_cuda": str(torch.version.cuda),
            "cxx11_abi": str(torch._C._GLIBCXX_USE_CXX11_ABI), "python": sys.implementation.cache_tag,
            "machine": platform.machine(), "nvcc": _tool_version(nvcc),
            "cxx": _tool_version(compiler), "arch_list": arch_list, "lean_headers": "1" if lean_headers else "0"}


def spec_key(spec: InlineSpec, environment: dict[str, str]) -> str:
    payload = {"format": KEY_FORMAT, "spec": spec.key_fields(), "environment": environment}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
