"""Launching NVRTC- and nvcc-built kernels on torch tensors (needs an NVIDIA GPU)."""

from __future__ import annotations

import pytest
import torch

from kernelpro.config import CompileSettings
from kernelpro.harness.compile.nvcc import compile_nvcc
from kernelpro.harness.compile.result import CompileRequest
from kernelpro.runtime import CubinKernel, CudaKernel
from tests.compile import kernels
from tests.compile.conftest import TOOLS, needs_nvcc, needs_nvrtc

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU"),
              needs_nvrtc]

DYNAMIC_SHARED = r"""
extern "C" __global__ void reverse_block(const float* in, float* out, int per_thread) {
    extern __shared__ float buf[];
    int n = blockDim.x * per_thread;
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = in[blockIdx.x * n + i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[blockIdx.x * n + i] = buf[n - 1 - i];
}
"""

HALF_SCALE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void half_scale(const __half* x, __half* out, __half s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hmul(x[i], s);
}
"""


@pytest.fixture
def gpu_settings(tmp_path) -> CompileSettings:
    """The visible GPU's target and a private cache."""
    return CompileSettings(cache_dir=tmp_path / "cache")


def test_add_kernel(gpu_settings):
    n = 10_000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    add = CudaKernel(kernels.ADD, "add_kernel", settings=gpu_settings)
    add(grid=((n + 255) // 256,), block=(256,), args=(x, y, out, n))
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)


def test_python_float_reaches_a_float_parameter_as_a_float(gpu_settings):
    n = 4096
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    scale = CudaKernel(kernels.SCALE, "scale_kernel", settings=gpu_settings)
    for value in (0.37, 3):  # a double's bytes read as a float would be garbage
        scale(grid=(n + 255) // 256, block=256, args=(x, out, value, n))
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x * value)


def test_more_than_48_kb_of_dynamic_shared_memory(gpu_settings):
    block, per_thread = 256, 64  # 256 * 64 floats = 64 KB per block
    x = torch.randn(4 * block * per_thread, device="cuda")
    out = torch.empty_like(x)
    kernel = CudaKernel(DYNAMIC_SHARED, "reverse_block", settings=gpu_settings)
    kernel(grid=4, block=block, args=(x, out, per_thread), shared_mem=block * per_thread * 4)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x.view(4, -1).flip(1).reshape(-1))


@needs_nvcc
def test_cubin_kernel_from_nvcc(tmp_path, gpu_settings):
    result = compile_nvcc(CompileRequest(source=kernels.ADD, backend="nvcc"), gpu_settings)
    assert result.ok, result.message
    path = tmp_path / "add.cubin"
    path.write_bytes(result.binary)
    n = 1000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    typed = "const float* x, const float* y, float* o, int n"
    for kernel in (CubinKernel(path, "add_kernel", source=kernels.ADD),
                   CubinKernel(result.binary, "add_kernel", signature=typed)):
        out = torch.zeros_like(x)
        kernel(grid=(n + 127) // 128, block=128, args=(x, y, out, n))
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x + y)


def test_template_kernel_and_a_non_default_stream(gpu_settings):
    out = torch.zeros(300, device="cuda")
    fill = CudaKernel(kernels.TEMPLATED, "fill<float, 300>", settings=gpu_settings)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # the zeros above were written on the default stream
    with torch.cuda.stream(stream):
        fill(grid=1, block=128, args=(out, 2.5))  # launched on the current (side) stream
    stream.synchronize()
    assert torch.all(out == 2.5)


@pytest.mark.skipif(not TOOLS.cuda_include_dirs, reason="no CUDA headers for cuda_fp16.h")
def test_half_by_value(gpu_settings):
    n = 512
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    CudaKernel(HALF_SCALE, "half_scale", settings=gpu_settings)(grid=2, block=256, args=(x, out, 0.5, n))
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * 0.5)


def test_tensor_checks_before_launch(gpu_settings):
    add = CudaKernel(kernels.ADD, "add_kernel", settings=gpu_settings)
    x = torch.randn(64, device="cuda")
    with pytest.raises(ValueError, match="must be on CUDA"):
        add(grid=1, block=64, args=(x.cpu(), x, x, 64))
    with pytest.raises(ValueError, match="non-contiguous"):
        add(grid=1, block=32, args=(torch.randn(8, 8, device="cuda").t(), x, x, 64))
    with pytest.raises(TypeError, match="points to float"):
        add(grid=1, block=64, args=(x.double(), x, x, 64))
    with pytest.raises(TypeError, match="takes 4 argument"):
        add(grid=1, block=64, args=(x, x, x))
