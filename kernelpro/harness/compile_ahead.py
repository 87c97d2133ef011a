"""Compiling candidates' CUDA kernels on the CPU before they reach the GPU.

A candidate builds its kernels with ``kernelpro.runtime.CudaKernel(SOURCE, "name", ...)`` (or a cubin with
``compile_cubin(SOURCE, ...)``). Where the source
and options are literals in the file, the judge can make the same compile request itself, in a process pool,
while the GPU is busy with other candidates: the worker then finds the binary in the shared cache, and a
kernel that does not compile is reported without a worker ever starting.
"""

from __future__ import annotations

import ast
from typing import Any

from kernelpro.config import CompileSettings
from kernelpro.harness.compile import CompileRequest, CompileResult, compile_many

# CudaKernel's keyword arguments that change the compile request, and how each maps onto it.
REQUEST_KEYWORDS = {"backend", "arch", "std", "include_dirs", "defines", "extra_flags"}


def _literal(node: ast.AST, constants: dict[str, Any]) -> Any:
    """The value of a literal (or of a module-level name bound to one); raises ValueError otherwise."""
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return ast.literal_eval(node)


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    constants: dict[str, Any] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            try:
                constants[statement.targets[0].id] = _literal(statement.value, constants)
            except ValueError:
                continue
    return constants


def kernel_requests(candidate_source: str) -> list[CompileRequest]:
    """The compile requests a candidate's ``CudaKernel(...)`` and ``compile_cubin(...)`` calls will make, where
    they are all literal.

    Mirrors ``CudaKernel.__init__`` and ``compile_cubin``, so the cache keys match. Calls with computed
    arguments are skipped: the worker compiles those itself.
    """
    try:
        tree = ast.parse(candidate_source)
    except SyntaxError:
        return []
    constants = _module_constants(tree)
    requests: list[CompileRequest] = []
    for call in ast.walk(tree):
        called = _called_name(call.func) if isinstance(call, ast.Call) else None
        if called not in ("CudaKernel", "compile_cubin"):
            continue
        cubin = called == "compile_cubin"
        try:
            positional = [_literal(a, constants) for a in call.args[:1 if cubin else 2]]
            arguments = dict(zip(("source", "name")[:len(positional)], positional, strict=True))
            if cubin:
                arguments |= {"name": "", "backend": "nvcc"}
            allowed = (REQUEST_KEYWORDS - {"backend"} if cubin else REQUEST_KEYWORDS | {"name"}) | {"source"}
            for keyword in call.keywords:
                if keyword.arg in allowed:
                    arguments[keyword.arg] = _literal(keyword.value, constants)
                elif keyword.arg is None:
                    raise ValueError("**kwargs")
        except ValueError:
            continue
        if not isinstance(arguments.get("source"), str) or not isinstance(arguments.get("name"), str):
            continue
        backend = arguments.get("backend", "nvrtc")
        requests.append(CompileRequest(
            source=arguments["source"], backend=backend, arch=arguments.get("arch"),
            std=arguments.get("std", "c++17"), include_dirs=[str(d) for d in arguments.get("include_dirs", ())],
            defines=dict(arguments.get("defines") or {}), extra_flags=list(arguments.get("extra_flags", ())),
            name_expressions=[arguments["name"]] if backend == "nvrtc" else []))
    return requests


def _called_name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def compile_ahead(candidate_sources: list[str], settings: CompileSettings) -> list[list[CompileResult]]:
    """Compile every literal kernel of every candidate in the compile pool, filling the shared cache.

    Returns, per candidate, the results of its kernels (empty where it has none the judge can see).
    """
    per_candidate = [kernel_requests(source) for source in candidate_sources]
    flat = [request for requests in per_candidate for request in requests]
    if not flat:
        return [[] for _ in candidate_sources]
    results = iter(compile_many(flat, settings))
    return [[next(results) for _ in requests] for requests in per_candidate]
