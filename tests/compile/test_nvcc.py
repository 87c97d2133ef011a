"""nvcc: cubins with a resource report, CUTLASS/CuTe headers, timeouts and a missing compiler."""

from __future__ import annotations

from kernelpro.config import CompileSettings
from kernelpro.harness.compile.nvcc import compile_nvcc
from kernelpro.harness.compile.result import CompileRequest
from tests.compile import kernels
from tests.compile.conftest import needs_cutlass, needs_nvcc


@needs_nvcc
def test_add_kernel_to_a_cubin(compile_settings):
    result = compile_nvcc(CompileRequest(source=kernels.ADD, backend="nvcc"), compile_settings)
    assert result.ok, result.message
    assert result.binary.startswith(b"\x7fELF") and result.kind == "cubin" and result.arch == "sm_90a"
    assert result.kernels == ["add_kernel"] and result.toolchain.startswith("nvcc 1")


@needs_nvcc
def test_ptx_output(compile_settings):
    result = compile_nvcc(CompileRequest(source=kernels.ADD, backend="nvcc", output="ptx"), compile_settings)
    assert result.ok and b".entry add_kernel" in result.binary and result.resources == {}


@needs_nvcc
@needs_cutlass
def test_cute_kernel_compiles_with_the_wheels_headers(compile_settings):
    result = compile_nvcc(CompileRequest(source=kernels.CUTE_COPY, backend="nvcc"), compile_settings)
    assert result.ok, result.message
    assert result.kernels == ["cute_copy"] and result.resources["cute_copy"].spill_stores == 0


@needs_nvcc
def test_timeout_is_a_result(tmp_path):
    settings = CompileSettings(arch="sm_90a", cache_dir=tmp_path, timeout_s=0.01)
    result = compile_nvcc(CompileRequest(source=kernels.ADD, backend="nvcc"), settings)
    assert not result.ok and result.failure == "timeout" and "0.01 s" in result.message


def test_missing_nvcc_is_a_result(tmp_path):
    settings = CompileSettings(arch="sm_90a", cache_dir=tmp_path, nvcc="/nonexistent/nvcc")
    result = compile_nvcc(CompileRequest(source=kernels.ADD, backend="nvcc"), settings)
    assert not result.ok and result.failure == "missing_toolchain" and "nvcc not found" in result.message
