"""The compile pool: a batch in order, one broken job failing alone, a hung compiler as a timeout."""

from __future__ import annotations

from kernelpro.config import CompileSettings
from kernelpro.harness.compile.pool import compile_many
from kernelpro.harness.compile.result import CompileRequest
from tests.compile import kernels
from tests.compile.conftest import needs_nvcc, needs_nvrtc


def numbered(i: int) -> CompileRequest:
    source = f'extern "C" __global__ void k{i}(float* p, int n) {{ if (n > {i}) p[{i}] = {i}.0f; }}'
    return CompileRequest(source=source)


@needs_nvrtc
@needs_nvcc
def test_batch_of_eight_keeps_order_and_isolates_the_broken_one(compile_settings):
    requests = [numbered(i) for i in range(6)]
    requests.insert(2, CompileRequest(source=kernels.UNDEFINED))
    requests.append(CompileRequest(source=kernels.SHARED, backend="nvcc"))
    results = compile_many(requests, compile_settings)
    assert len(results) == 8
    assert [r.ok for r in results] == [True, True, False, True, True, True, True, True]
    assert [r.kernels for r in results if r.ok] == [["k0"], ["k1"], ["k2"], ["k3"], ["k4"], ["k5"], ["transpose_tile"]]
    assert results[2].failure == "compile" and "undefined_thing" in results[2].message
    assert results[7].backend == "nvcc" and all(r.arch == "sm_90a" for r in results)

    again = compile_many(requests, compile_settings)  # all answered from the cache, no pool
    assert [r.cached for r in again] == [True, True, False, True, True, True, True, True]
    assert [r.binary for r in again] == [r.binary for r in results]


@needs_nvrtc
def test_a_compiler_that_never_returns_becomes_a_timeout(tmp_path):
    # NVRTC cannot be interrupted: the job's alarm ends its worker, and the job alone is found to blame.
    settings = CompileSettings(arch="sm_90a", cache_dir=tmp_path, workers=2, timeout_s=0.01)
    slow = "\n".join(f'extern "C" __global__ void s{i}(float* p) {{ for (int j = 0; j < 64; ++j) '
                     f'p[j * {i + 1}] += sinf(p[j]) * {i}; }}' for i in range(400))
    results = compile_many([numbered(0), CompileRequest(source=slow), numbered(1)], settings, use_cache=False)
    assert [r.ok for r in results] == [True, False, True]
    assert results[1].failure == "timeout" and "did not finish" in results[1].message


def test_empty_batch():
    assert compile_many([], CompileSettings(arch="sm_90a")) == []
