"""Ghost kernels: a candidate that builds a custom kernel and never runs it while judged.

What a candidate built comes from two places: ``kernelpro.runtime``'s launch ledger (every ``CudaKernel`` or
``CubinKernel`` it constructed, and its launches) and, for the other backends, the kernels its source declares
(``__global__`` functions in CUDA source it compiles with ``load_inline`` and the like, ``@triton.jit`` and
``@cute.kernel`` functions). What ran comes from the ledger's launches during the judged calls and, on CUDA,
from the names of the kernels the profiler saw in the stream check's call.
"""

from __future__ import annotations

import ast
import re

from kernelpro.harness.guards.launch_ledger import LaunchLedger
from kernelpro.harness.guards.static import dotted_name
from kernelpro.harness.result import GuardFinding

_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"
GLOBAL_FUNCTION = re.compile(rf"__global__\s+{_BOUNDS}void\s+{_BOUNDS}(\w+)\s*\(")
# Source-compiling entry points: a __global__ function in a string is built only when one of these is used.
SOURCE_COMPILERS = ("load_inline", "cpp_extension", "CudaKernel", "CubinKernel", "compile_cubin", "RawKernel",
                    "RawModule", "nvrtc")
KERNEL_DECORATORS = {"jit", "autotune", "heuristics", "kernel"}  # triton.jit/autotune/heuristics, cute.kernel
KERNEL_MODULES = ("triton", "cute", "cutlass")


def declared_kernels(source: str) -> set[str]:
    """Names of the device kernels the source declares for a backend other than the runtime's ledger."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    if any(word in source for word in SOURCE_COMPILERS):
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.update(GLOBAL_FUNCTION.findall(node.value))
    imported = _imported_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = dotted_name(target) or ""
                root, _, last = name.rpartition(".")
                origin = imported.get((root or last).split(".")[0], "")
                if (last in KERNEL_DECORATORS and origin.startswith(KERNEL_MODULES)) or \
                        (not root and origin.startswith(KERNEL_MODULES) and origin.split(".")[-1] in KERNEL_DECORATORS):
                    names.add(node.name)
    return names


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> the module path it was imported as."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                found[alias.asname or root] = alias.name if alias.asname else root
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def ghost_kernel(ledger: LaunchLedger, launches_before: int, declared: set[str],
                 traced_kernels: list[str] | None, rejects: bool) -> GuardFinding | None:
    """The finding when the candidate built kernels and none of them ran in the judged calls.

    ``launches_before``: the ledger's launch total when the judged calls began. ``traced_kernels``: the kernel
    names the profiler saw in one judged call, or None where there was no trace (CPU); declared kernels are
    judged only with a trace.
    """
    if ledger.total() > launches_before:
        return None
    built = sorted(ledger.kernels)
    if traced_kernels is not None and declared:
        # A substring: the CuTe DSL and nvcc decorate names (a miss only hides a ghost, never invents one).
        if any(name in traced for name in declared for traced in traced_kernels):
            return None
        built += sorted(declared - set(built))
    if not built:
        return None
    shown = ", ".join(built[:4]) + (" ..." if len(built) > 4 else "")
    return GuardFinding(reason="ghost_kernel", severity="reject" if rejects else "warn", source="dynamic",
                        message=f"it builds custom kernel(s) ({shown}) but none of them ran in the judged calls: "
                                "the work was done some other way")
