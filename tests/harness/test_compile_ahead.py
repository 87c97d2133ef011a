"""Kernels compiled ahead of the worker: literal CudaKernel calls are found, compiled in the pool, cached."""

from __future__ import annotations

import pytest

from kernelpro.harness.compile import CompileCache, compile_cached
from kernelpro.harness.compile.toolchain import detect
from kernelpro.harness.compile_ahead import kernel_requests
from kernelpro.harness.judge import judge_many
from tests.conftest import candidate, problem

needs_nvrtc = pytest.mark.skipif(detect().nvrtc_version is None, reason="NVRTC not installed")


def test_literal_kernel_calls_become_requests():
    requests = kernel_requests(candidate("honest_cuda_scale_relu"))
    assert len(requests) == 1
    assert requests[0].name_expressions == ["scale_relu"] and "fmaxf" in requests[0].source


def test_computed_arguments_are_left_to_the_worker():
    source = ("from kernelpro.runtime import CudaKernel\nSRC = open('k.cu').read()\nk = CudaKernel(SRC, 'k')\n"
              "j = CudaKernel('__global__ void j() {}', 'j', extra_flags=FLAGS)\n"
              "m = CudaKernel('__global__ void m() {}', 'm', backend='nvcc', defines={'N': '4'})\n")
    requests = kernel_requests(source)
    assert [(r.backend, r.defines) for r in requests] == [("nvcc", {"N": "4"})]


@needs_nvrtc
def test_a_kernel_that_does_not_compile_needs_no_worker(settings, tmp_path):
    settings.compile.cache_dir = tmp_path / "cache"
    [result] = judge_many(problem("scale_relu"), [candidate("fault_kernel_compile_error")], "cpu", settings)
    assert (result.status, result.reason) == ("compile_error", "kernel_compile_error")
    assert "kernel.cu:4" in result.message and "scal" in result.message
    assert result.elapsed_s is None  # decided before any worker started


@needs_nvrtc
def test_batch_fills_the_cache_the_worker_reads(settings, tmp_path):
    settings.compile.cache_dir = tmp_path / "cache"
    results = judge_many(problem("scale_relu"), [candidate("honest_cuda_scale_relu"),
                                                  candidate("honest_scale_relu")], "cpu", settings)
    assert results[1].status == "ok"
    # No GPU here: the CUDA candidate compiles (from the cache) and then fails to load its kernel.
    assert results[0].status == "runtime_error"
    assert "CUDA" in results[0].message or "cuda" in results[0].message
    [request] = kernel_requests(candidate("honest_cuda_scale_relu"))
    assert compile_cached(request, settings.compile, CompileCache(settings.compile.cache_dir)).cached


def test_compile_cubin_calls_become_nvcc_requests():
    [request] = kernel_requests(candidate("honest_cubin_scale_relu"))
    assert (request.backend, request.name_expressions) == ("nvcc", []) and "fmaxf" in request.source
