"""Exporting candidates: NVRTC candidates get a standalone twin whose generated C++ compiles with nvcc."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from torch.utils.cpp_extension import COMMON_NVCC_FLAGS, include_paths

from kernelpro.harness.judge import judge, precheck
from kernelpro.harness.result import EvalResult
from kernelpro.report.export import HALF_FLAGS, export_candidate
from tests.conftest import candidate, problem

TWO_SOURCES = r'''
import torch
import torch.nn as nn

from kernelpro.runtime import CudaKernel as Kernel, KernelCompileError

TEMPLATED = r"""
template <typename T>
__global__ void scale(const T* x, T* y, float s, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * (T)s;
}
"""
HALF = r"""
#include <cuda_fp16.h>
extern "C" __global__ void axpb(const __half* x, const __half* bias, __half* y, __half a, unsigned n, bool add) {
    extern __shared__ float scratch[];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    scratch[threadIdx.x] = 0.0f;
    if (i < n) y[i] = x[i] * a + (add && bias ? bias[i] : __float2half(0.0f));
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = Kernel(TEMPLATED, "scale<float>")
        self.scale_again = Kernel(TEMPLATED, "scale<float>")
        self.axpb = Kernel(HALF, "axpb")

    def forward(self, x):
        y = torch.empty_like(x)
        self.scale(grid=(1,), block=(256,), args=(x, y, 2.0, x.numel()))
        return y
'''


def test_candidates_without_kernelpro_are_already_standalone():
    source = candidate("honest_triton_scale_relu")
    exported = export_candidate(source)
    assert exported.standalone_source == source and exported.kind == "triton" and not exported.extensions


def test_a_cubin_candidate_keeps_kernelpro_and_says_why():
    source = "from kernelpro.runtime import CubinKernel\n\nclass ModelNew:\n    pass\n"
    exported = export_candidate(source)
    assert exported.standalone_source is None
    assert "CubinKernel has no standalone equivalent" in exported.notes[0]


def test_a_computed_kernel_source_cannot_be_exported():
    source = ("from kernelpro.runtime import CudaKernel\n\nclass ModelNew:\n"
              "    def __init__(self):\n        self.k = CudaKernel(make_source(), 'k')\n")
    assert "computed at run time" in export_candidate(source).notes[0]


def test_the_standalone_file_has_no_kernelpro_and_passes_the_static_guards(tmp_path):
    exported = export_candidate(candidate("honest_cuda_scale_relu"))
    text = exported.standalone_source
    tree = ast.parse(text)
    imported = [getattr(n, "module", None) or a.name for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names]
    assert not any("kernelpro" in name for name in imported)
    assert "kernelpro.runtime import" not in text and "load_inline" in text
    assert isinstance(precheck(text), list)
    assert exported.extensions[0].kernels == {"scale_relu": "launch_0"}
    assert candidate("honest_cuda_scale_relu").split("SOURCE = ", 1)[1] in text  # the candidate's own code stays
    written = exported.write(tmp_path)
    assert [p.name for p in written] == ["best_candidate.py", "best_candidate_standalone.py"]


def test_the_shim_keeps_aliases_and_groups_kernels_by_source():
    exported = export_candidate(TWO_SOURCES)
    assert exported.standalone_source is not None, exported.notes
    assert "Kernel = CudaKernel" in exported.standalone_source
    assert [e.kernels for e in exported.extensions] == [{"scale<float>": "launch_0"}, {"axpb": "launch_1"}]
    assert isinstance(precheck(exported.standalone_source), list)


def _compile(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", ["honest_cuda_scale_relu", "two_sources"])
def test_the_generated_cpp_and_cuda_compile_with_nvcc(name, tmp_path):
    """Both translation units, compiled the way load_inline compiles them (nvcc -c), without a GPU. The C++
    side includes torch/extension.h, whose parse alone takes minutes of CPU on a small machine: it is checked
    once, syntax only, on the last binding of the two-source case (every binding comes from one generator)."""
    exported = export_candidate(TWO_SOURCES if name == "two_sources" else candidate(name))
    cuda_include = Path(shutil.which("nvcc")).resolve().parents[1] / "include"
    torch_includes = [f"-I{p}" for p in include_paths()] + [f"-I{sysconfig.get_paths()['include']}",
                                                             f"-I{cuda_include}"]
    jobs = []
    for i, extension in enumerate(exported.extensions):
        (tmp_path / f"cuda{i}.cu").write_text(extension.cuda_source)
        (tmp_path / f"main{i}.cpp").write_text(extension.cpp_source)
        jobs.append(["nvcc", "-c", f"cuda{i}.cu", "-o", f"cuda{i}.o", "-arch=sm_90", "-std=c++17",
                     *COMMON_NVCC_FLAGS, *HALF_FLAGS])
    if name == "two_sources":
        last = len(exported.extensions) - 1
        jobs.append(["g++", "-fsyntax-only", "-std=c++20", f"-DTORCH_EXTENSION_NAME=kp_export_{last}",
                     *torch_includes, f"main{last}.cpp"])
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda job: _compile(job, tmp_path), jobs))
    for job, result in zip(jobs, results, strict=True):
        assert result.returncode == 0, f"{' '.join(job)}\n{result.stderr[-3000:]}"
    symbols = subprocess.run(["nm", "-C", str(tmp_path / "cuda0.o")], capture_output=True, text=True).stdout
    assert "kp_launch_0(" in symbols


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_the_standalone_nvrtc_candidate_is_judged_ok_on_cuda(settings):
    settings.harness.timeout_s = 600  # load_inline builds the extension inside the worker
    exported = export_candidate(candidate("honest_cuda_scale_relu"))
    result = judge(problem("scale_relu"), exported.standalone_source, device="cuda", settings=settings)
    assert isinstance(result, EvalResult) and result.status == "ok", result.message + result.worker_output[-2000:]
