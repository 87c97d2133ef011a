"""The candidate-facing helper on the CPU side: compile through the cache, signatures, errors before launch."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from kernelpro.harness.compile.cache import CompileCache
from kernelpro.runtime import CubinKernel, CudaKernel, KernelCompileError, KernelLaunchError
from tests.compile import kernels
from tests.compile.conftest import needs_nvcc, needs_nvrtc


@needs_nvrtc
def test_kernel_compiles_once_then_comes_from_the_cache(compile_settings):
    first = CudaKernel(kernels.ADD, "add_kernel", settings=compile_settings)
    assert first.symbol == "add_kernel" and first.result.arch == "sm_90a" and not first.result.cached
    assert first.resources.registers > 0
    second = CudaKernel(kernels.ADD, "add_kernel", settings=compile_settings)
    assert second.result.cached and second.result.binary == first.result.binary
    assert CompileCache(compile_settings.cache_dir).get(first.result.key) is not None
    assert "add_kernel(const float* __restrict__ x" in repr(first)


@needs_nvrtc
def test_template_kernel_by_name_expression(compile_settings):
    kernel = CudaKernel(kernels.TEMPLATED, "fill<float, 256>", settings=compile_settings)
    assert kernel.symbol == "_Z4fillIfLi256EEvPT_S0_"
    assert [(p.ctype, p.pointer) for p in kernel.signature.params] == [("float", True), ("float", False)]


@needs_nvrtc
def test_compile_error_carries_condensed_diagnostics(compile_settings):
    with pytest.raises(KernelCompileError) as caught:
        CudaKernel(kernels.UNDEFINED, "add_kernel", settings=compile_settings)
    assert str(caught.value).startswith('kernel.cu:5:32: error: identifier "undefined_thing" is undefined')
    assert caught.value.result is not None and not caught.value.result.ok


@needs_nvcc
def test_nvcc_backend_needs_an_extern_c_name(compile_settings):
    kernel = CudaKernel(kernels.SHARED, "transpose_tile", backend="nvcc", settings=compile_settings)
    assert kernel.result.backend == "nvcc" and kernel.resources.shared_static == kernels.SHARED_BYTES
    with pytest.raises(KernelCompileError, match='no kernel "fill<float, 8>" in the compiled binary'):
        CudaKernel(kernels.TEMPLATED + "template __global__ void fill<float, 8>(float*, float);",
                   "fill<float, 8>", backend="nvcc", settings=compile_settings)


@needs_nvrtc
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without a GPU")
def test_launch_without_cuda_is_a_clear_error(compile_settings):
    kernel = CudaKernel(kernels.ADD, "add_kernel", settings=compile_settings)
    with pytest.raises(KernelLaunchError, match="CUDA is not available"):
        kernel(grid=1, block=32, args=(torch.ones(4), torch.ones(4), torch.ones(4), 4))


def test_cubin_kernel_needs_parameter_types(tmp_path):
    path = tmp_path / "k.cubin"
    path.write_bytes(b"\x7fELF")
    with pytest.raises(TypeError, match="needs the parameter types"):
        CubinKernel(path, "k")
    kernel = CubinKernel(path, "k", signature="const float* x, float s")
    assert kernel.binary == b"\x7fELF" and [p.ctype for p in kernel.signature.params] == ["float", "float"]
    assert CubinKernel(b"", "add_kernel", source=kernels.ADD).signature.params[3].ctype == "int"


def test_runtime_does_not_import_torch_extension_machinery():
    code = "import sys, kernelpro.runtime; print('torch.utils.cpp_extension' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
