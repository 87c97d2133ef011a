"""One compile request to the backend it names, without caching."""

from __future__ import annotations

from kernelpro.config import CompileSettings
from kernelpro.harness.compile.nvcc import compile_nvcc
from kernelpro.harness.compile.nvrtc import compile_nvrtc
from kernelpro.harness.compile.result import CompileRequest, CompileResult
from kernelpro.harness.compile.toolchain import Toolchain


def compile_source(request: CompileRequest, settings: CompileSettings | None = None,
                   toolchain: Toolchain | None = None) -> CompileResult:
    """Compile with NVRTC or nvcc as ``request.backend`` says. Never raises for bad source."""
    backend = compile_nvrtc if request.backend == "nvrtc" else compile_nvcc
    return backend(request, settings, toolchain)
