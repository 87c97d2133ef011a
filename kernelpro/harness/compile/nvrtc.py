"""CUDA C++ to a cubin (or PTX) in this process with NVRTC, in tens of milliseconds.

Through ``cuda.bindings.nvrtc`` rather than ``cuda.core`` or CuPy: it is the thinnest layer over the C API
(no runtime or memory pool of its own, nothing between us and NVRTC's options and log), the same package
provides the driver API that loads and launches the result, and with the ``nvidia-cuda-nvrtc`` wheel it
installs from PyPI, so compiling needs no CUDA toolkit and no GPU.
"""

from __future__ import annotations

import time
from typing import Any

from kernelpro.config import CompileSettings
from kernelpro.harness.compile import diagnostics, resources
from kernelpro.harness.compile.result import CompileRequest, CompileResult, failed
from kernelpro.harness.compile.toolchain import Toolchain, detect, resolve_arch


class NvrtcCallError(RuntimeError):
    """An NVRTC call other than the compilation itself failed."""


def virtual_arch(arch: str) -> str:
    """``sm_90a`` -> ``compute_90a`` (the target PTX is generated for)."""
    return "compute_" + arch.split("_", 1)[1] if arch.startswith("sm_") else arch


def options(request: CompileRequest, arch: str, include_dirs: list[str]) -> list[str]:
    """NVRTC's command line for ``request``."""
    target = arch if request.output == "cubin" else virtual_arch(arch)
    opts = [f"--gpu-architecture={target}", f"-std={request.std}"]
    if request.lineinfo:
        opts.append("-lineinfo")
    if request.output == "cubin":
        opts.append("--ptxas-options=-v")  # the per-kernel resource report, at no measurable cost
    opts += [f"-I{d}" for d in include_dirs]
    opts += [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in sorted(request.defines.items())]
    return opts + list(request.extra_flags)


def _check(nvrtc: Any, result: Any, call: str) -> None:
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NvrtcCallError(f"{call} failed: {nvrtc.nvrtcGetErrorString(result)[1].decode()}")


def _log(nvrtc: Any, prog: Any) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    _check(nvrtc, err, "nvrtcGetProgramLogSize")
    buf = b" " * size
    _check(nvrtc, nvrtc.nvrtcGetProgramLog(prog, buf)[0], "nvrtcGetProgramLog")
    return buf.rstrip(b"\x00").decode("utf-8", errors="replace")


def _binary(nvrtc: Any, prog: Any, kind: str) -> bytes:
    size_call, get_call = ((nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if kind == "cubin"
                           else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX))
    err, size = size_call(prog)
    _check(nvrtc, err, size_call.__name__)
    buf = b" " * size
    _check(nvrtc, get_call(prog, buf)[0], get_call.__name__)
    return buf  # PTX keeps its terminating NUL, which cuModuleLoadData expects


def _compile(nvrtc: Any, request: CompileRequest, opts: list[str]) -> tuple[Any, str, bytes, dict[str, str]]:
    err, prog = nvrtc.nvrtcCreateProgram(request.source.encode(), request.filename.encode(), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        for expr in request.name_expressions:
            _check(nvrtc, nvrtc.nvrtcAddNameExpression(prog, expr.encode())[0], "nvrtcAddNameExpression")
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        log = _log(nvrtc, prog)
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return status, log, b"", {}
        lowered: dict[str, str] = {}
        for expr in request.name_expressions:
            err, name = nvrtc.nvrtcGetLoweredName(prog, expr.encode())
            _check(nvrtc, err, "nvrtcGetLoweredName")
            lowered[expr] = name.decode()
        return status, log, _binary(nvrtc, prog, request.output), lowered
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def compile_nvrtc(request: CompileRequest, settings: CompileSettings | None = None,
                  toolchain: Toolchain | None = None) -> CompileResult:
    """Compile ``request`` with NVRTC. Never raises: failures come back as a result with ``ok=False``."""
    settings = settings or CompileSettings()
    toolchain = toolchain or detect(settings)
    tag = toolchain.tag("nvrtc")
    arch = resolve_arch(request.arch, settings)
    if toolchain.nvrtc_version is None:
        return failed(request, "missing_toolchain", "NVRTC is not available: install cuda-bindings and "
                      "nvidia-cuda-nvrtc (pip)", arch=arch, toolchain=tag)
    from cuda.bindings import nvrtc

    includes = [*request.include_dirs, *map(str, settings.include_dirs), *toolchain.cuda_include_dirs]
    opts = options(request, arch, includes)
    started = time.perf_counter()
    try:
        status, log, binary, lowered = _compile(nvrtc, request, opts)
    except Exception as exc:  # a binding or loader error is the compiler's failure, not the candidate's
        return failed(request, "internal", f"NVRTC: {exc}", arch=arch, toolchain=tag,
                      elapsed_s=time.perf_counter() - started)
    elapsed = time.perf_counter() - started
    found = diagnostics.parse(log, request.filename)
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        message = diagnostics.condense(log, request.source, request.filename, request.warnings)
        result = failed(request, "compile", message or nvrtc.nvrtcGetErrorString(status)[1].decode(),
                        arch=arch, log=log, elapsed_s=elapsed, toolchain=tag)
        result.diagnostics = found
        return result
    usage = resources.from_ptxas(log) if request.output == "cubin" else {}
    if not usage and request.output == "cubin" and toolchain.cuobjdump:
        usage = resources.from_cubin(binary, toolchain.cuobjdump)
    shown = request.warnings and any(d.severity == "warning" for d in found)
    return CompileResult(
        ok=True, backend="nvrtc", kind=request.output, arch=arch, binary=binary, lowered_names=lowered, log=log,
        elapsed_s=elapsed, resources=usage, diagnostics=found, toolchain=tag,
        message=diagnostics.condense(log, request.source, request.filename, warnings=True) if shown else "",
    )
