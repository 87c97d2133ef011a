"""Every kernel backend a candidate can use, judged for real through the pipeline on CUDA."""

from __future__ import annotations

import importlib.util
import shutil

import pytest
import torch

from kernelpro.harness.pipeline import Pipeline
from tests.conftest import candidate, problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")]

BACKENDS = {
    "honest_cuda_scale_relu": "NVRTC through kernelpro.runtime.CudaKernel",
    "honest_cubin_scale_relu": "nvcc to a cubin, launched with CubinKernel",
    "honest_triton_scale_relu": "Triton",
    "honest_load_inline_scale_relu": "torch.utils.cpp_extension.load_inline",
}
needs_cute = pytest.mark.skipif(importlib.util.find_spec("cutlass") is None,
                                reason="the CuTe DSL is not installed (pip install nvidia-cutlass-dsl)")


def _judge(names, settings):
    settings.harness.timeout_s = 300  # load_inline builds against torch's headers: about a minute
    with Pipeline("cuda", settings) as pipeline:
        results = pipeline.judge([(problem("scale_relu"), candidate(n)) for n in names])
        return results, pipeline.stats


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found (cubin and load_inline need it)")
def test_four_backends_in_one_long_lived_worker(settings, tmp_path):
    settings.compile.cache_dir = tmp_path / "cache"
    names = list(BACKENDS)
    results, stats = _judge(names, settings)
    for name, result in zip(names, results, strict=True):
        assert result.status == "ok", f"{BACKENDS[name]}: {result.message}\n{result.worker_output[-2000:]}"
        assert result.candidate.method.startswith("cuda events")
    assert stats.worker_starts == 1, stats.restarts


@needs_cute
def test_cute_dsl_kernel(settings, tmp_path):
    settings.compile.cache_dir = tmp_path / "cache"
    [result], _ = _judge(["honest_cute_scale_relu"], settings)
    assert result.status == "ok", f"{result.message}\n{result.worker_output[-2000:]}"


def test_illegal_address_restarts_the_worker_and_the_next_candidate_passes(settings):
    names = ["honest_triton_scale_relu", "fault_illegal_address", "honest_cuda_scale_relu", "honest_scale_relu"]
    results, stats = _judge(names, settings)
    assert [(r.status, r.reason) for r in results] == [
        ("ok", None), ("runtime_error", "cuda_error"), ("ok", None), ("ok", None)], [r.message for r in results]
    assert stats.restarts == ["the verdict was cuda_error"]


def test_cheats_on_cuda_through_one_long_lived_worker(settings):
    """Each CUDA-only hack is still caught when the worker has judged others before it."""
    names = ["honest_scale_relu", "cheat_stale_memory", "honest_cuda_scale_relu", "cheat_tensor_subclass",
             "honest_triton_scale_relu", "cheat_input_mutation", "honest_scale_relu"]
    results, stats = _judge(names, settings)
    assert [(r.status, r.reason) for r in results] == [
        ("ok", None), ("rejected", "stale_memory"), ("ok", None), ("rejected", "tensor_subclass"), ("ok", None),
        ("rejected", "input_mutation"), ("ok", None)], [r.message for r in results]
    assert stats.restarts == ["the candidate tampered with the process (tensor_subclass)"]
