"""Compiling candidates' CUDA C++ on the CPU, ahead of the GPU: NVRTC in-process, nvcc for CUTLASS/CuTe.

``compile_cached`` compiles one request through the on-disk cache, ``compile_many`` a batch in a process
pool; both return ``CompileResult``s with the binary, per-kernel resource usage and, on failure, condensed
diagnostics. Nothing here needs a GPU.
"""

from kernelpro.harness.compile.cache import CompileCache, compile_cached
from kernelpro.harness.compile.diagnostics import Diagnostic, condense
from kernelpro.harness.compile.dispatch import compile_source
from kernelpro.harness.compile.pool import compile_many
from kernelpro.harness.compile.resources import KernelResources
from kernelpro.harness.compile.result import CompileRequest, CompileResult
from kernelpro.harness.compile.toolchain import Toolchain, detect

__all__ = ["CompileCache", "CompileRequest", "CompileResult", "Diagnostic", "KernelResources", "Toolchain",
           "compile_cached", "compile_many", "compile_source", "condense", "detect"]
