"""CUDA C++ to a cubin (or PTX) with nvcc, for kernels that need CUTLASS/CuTe or nvcc-only features.

Slower than NVRTC (a process per stage, the host compiler for preprocessing) but it takes any header.
CUTLASS's headers are on the include path whenever the ``nvidia-cutlass`` wheel is installed.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from kernelpro.config import CompileSettings
from kernelpro.harness.compile import diagnostics, resources
from kernelpro.harness.compile.result import CompileRequest, CompileResult, failed
from kernelpro.harness.compile.toolchain import Toolchain, detect, resolve_arch
from kernelpro.harness.limited_run import run_limited


def command(nvcc: str, request: CompileRequest, arch: str, include_dirs: list[str], output: str) -> list[str]:
    """nvcc's command line for ``request``, compiling ``request.filename`` in the current folder."""
    cmd = [nvcc, f"-{request.output}", f"-arch={arch}", f"-std={request.std}", "--expt-relaxed-constexpr"]
    if request.output == "cubin":
        cmd += ["-Xptxas", "-v"]
    if request.lineinfo:
        cmd.append("-lineinfo")
    cmd += [f"-I{d}" for d in include_dirs]
    cmd += [f"-D{k}" if v is None else f"-D{k}={v}" for k, v in sorted(request.defines.items())]
    return [*cmd, *request.extra_flags, "-o", output, request.filename]


def compile_nvcc(request: CompileRequest, settings: CompileSettings | None = None,
                 toolchain: Toolchain | None = None) -> CompileResult:
    """Compile ``request`` with nvcc. Never raises: failures come back as a result with ``ok=False``."""
    settings = settings or CompileSettings()
    toolchain = toolchain or detect(settings)
    tag = toolchain.tag("nvcc")
    arch = resolve_arch(request.arch, settings)
    if toolchain.nvcc is None:
        return failed(request, "missing_toolchain", f"nvcc not found ({settings.nvcc!r}; set compile.nvcc or "
                      "CUDA_HOME)", arch=arch, toolchain=tag)
    includes = [*request.include_dirs, *map(str, settings.include_dirs)]
    if toolchain.cutlass_include:
        includes.append(toolchain.cutlass_include)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelpro-nvcc-") as tmp:
        name = Path(request.filename).name
        request = request.model_copy(update={"filename": name})
        (Path(tmp) / name).write_text(request.source)
        output = f"kernel.{request.output}"
        try:
            # its own process group, so a timeout also ends cicc and ptxas
            code, log, _ = run_limited(command(toolchain.nvcc, request, arch, includes, output), tmp, None,
                                       settings.timeout_s)
            binary = (Path(tmp) / output).read_bytes() if code == 0 else b""
        except OSError as exc:
            return failed(request, "internal", f"nvcc: {exc}", arch=arch, toolchain=tag,
                          elapsed_s=time.perf_counter() - started)
    elapsed = time.perf_counter() - started
    if code is None:
        return failed(request, "timeout", f"nvcc did not finish within {settings.timeout_s:g} s", arch=arch,
                      log=log, elapsed_s=elapsed, toolchain=tag)
    found = diagnostics.parse(log, name)
    if code != 0:
        message = diagnostics.condense(log, request.source, name, request.warnings)
        kind = "crash" if code < 0 else "compile"
        result = failed(request, kind, message or f"nvcc exited with code {code}", arch=arch, log=log,
                        elapsed_s=elapsed, toolchain=tag)
        result.diagnostics = found
        return result
    shown = request.warnings and any(d.severity == "warning" for d in found)
    return CompileResult(
        ok=True, backend="nvcc", kind=request.output, arch=arch, binary=binary, log=log, elapsed_s=elapsed,
        resources=resources.from_ptxas(log) if request.output == "cubin" else {}, diagnostics=found,
        toolchain=tag, message=diagnostics.condense(log, request.source, name, warnings=True) if shown else "",
    )
