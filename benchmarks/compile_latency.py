"""Compile latency per backend on the same kernels, compile caches off: NVRTC, nvcc, Triton, CuTe DSL, load_inline.

    PYTHONPATH=. python benchmarks/compile_latency.py --out benchmarks/results/compile_latency_h200.json

Kernels: vector add, ReLU+scale, a row softmax (one block per row). NVRTC and nvcc go through kernelpro's
compile module without its cache (``compile_source``), in this process. Triton (its first call: compile and
launch), the CuTe DSL (``cute.compile``) and ``load_inline`` run in a new process per measurement with an empty
cache directory of their own, so nothing is reused; only the compile call itself is timed, not the imports.
load_inline builds take about a minute, so they repeat ``--load-inline-repeats`` times, all builds at once in
parallel processes (each build runs at most two compiler processes, MAX_JOBS=2, well under the host's cores;
the JSON records this). The headline is each backend's median against load_inline's (target: NVRTC >= 100x).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import CompileSettings  # noqa: E402
from kernelpro.harness.compile import CompileRequest, compile_source  # noqa: E402

CUDA = {
    "vector_add": ("add_kernel", r"""
extern "C" __global__ void add_kernel(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
"""),
    "scale_relu": ("scale_relu", r"""
extern "C" __global__ void scale_relu(const float* x, float* y, float scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f) * scale;
}
"""),
    "row_softmax": ("row_softmax", r"""
extern "C" __global__ void row_softmax(const float* x, float* y, int cols) {
    __shared__ float red[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* out = y + (long long)blockIdx.x * cols;
    float m = -__int_as_float(0x7f800000);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = red[0];
    for (int w = 1; w < (blockDim.x >> 5); ++w) m = fmaxf(m, red[w]);
    __syncthreads();
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(row[c] - m);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
    __syncthreads();
    s = 0.0f;
    for (int w = 0; w < (blockDim.x >> 5); ++w) s += red[w];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = __expf(row[c] - m) / s;
}
"""),
}

TRITON = r'''
import sys, time, torch, triton, triton.language as tl
@triton.jit
def vector_add(x, y, o, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B); m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)
@triton.jit
def scale_relu(x, o, s, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B); m = i < n
    tl.store(o + i, tl.maximum(tl.load(x + i, mask=m), 0.0) * s, mask=m)
@triton.jit
def row_softmax(x, o, cols, B: tl.constexpr):
    r = tl.program_id(0); c = tl.arange(0, B); m = c < cols
    v = tl.load(x + r * cols + c, mask=m, other=-float("inf")); e = tl.exp(v - tl.max(v, 0))
    tl.store(o + r * cols + c, e / tl.sum(e, 0), mask=m)
x = torch.randn(4096, 1024, device="cuda"); y = torch.randn_like(x); o = torch.empty_like(x); n = x.numel()
torch.cuda.synchronize()
calls = {"vector_add": lambda: vector_add[(n // 1024,)](x, y, o, n, B=1024),
         "scale_relu": lambda: scale_relu[(n // 1024,)](x, o, 1.5, n, B=1024),
         "row_softmax": lambda: row_softmax[(4096,)](x, o, 1024, B=1024)}
t = time.perf_counter(); calls[sys.argv[1]](); torch.cuda.synchronize(); print(time.perf_counter() - t)
'''

CUTE = r'''
import sys, time, torch, cutlass, cutlass.cute as cute
from cutlass.cute.runtime import from_dlpack
@cute.kernel
def vector_add_k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, n: cutlass.Int32):
    t, _, _ = cute.arch.thread_idx(); bi, _, _ = cute.arch.block_idx(); i = bi * 256 + t
    if i < n:
        c[i] = a[i] + b[i]
@cute.kernel
def scale_relu_k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, n: cutlass.Int32):
    t, _, _ = cute.arch.thread_idx(); bi, _, _ = cute.arch.block_idx(); i = bi * 256 + t
    if i < n:
        c[i] = cute.arch.fmax(a[i], cutlass.Float32(0.0)) * cutlass.Float32(1.5)
@cute.jit
def vector_add(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, n: cutlass.Int32):
    vector_add_k(a, b, c, n).launch(grid=(cute.ceil_div(n, 256), 1, 1), block=(256, 1, 1))
@cute.jit
def scale_relu(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, n: cutlass.Int32):
    scale_relu_k(a, b, c, n).launch(grid=(cute.ceil_div(n, 256), 1, 1), block=(256, 1, 1))
x = torch.randn(1 << 22, device="cuda"); y = torch.randn_like(x); o = torch.empty_like(x)
args = [from_dlpack(t).mark_layout_dynamic() for t in (x, y, o)] + [cutlass.Int32(x.numel())]
fn = {"vector_add": vector_add, "scale_relu": scale_relu}[sys.argv[1]]
t = time.perf_counter(); cute.compile(fn, *args); print(time.perf_counter() - t)
'''

LOAD_INLINE = r'''
import sys, time, torch
from torch.utils.cpp_extension import load_inline
name, kernel, source = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
wrapper = '\n#include <torch/extension.h>\nvoid touch(torch::Tensor x) {}\n'
t = time.perf_counter()
load_inline(name=name, cpp_sources="void touch(torch::Tensor x);", cuda_sources=wrapper + source,
            functions=["touch"])
print(time.perf_counter() - t)
'''


def summary(samples: list[float]) -> dict:
    return {"median_s": statistics.median(samples), "min_s": min(samples), "max_s": max(samples),
            "spread": (max(samples) - min(samples)) / statistics.median(samples), "repeats": len(samples),
            "samples_s": [round(s, 4) for s in samples]}


def in_process(backend: str, repeats: int) -> dict:
    settings = CompileSettings()
    out = {}
    for kernel, (name, source) in CUDA.items():
        request = CompileRequest(source=source, backend=backend, name_expressions=[name] if backend == "nvrtc" else [])
        compile_source(request, settings)  # first use loads the compiler library
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            result = compile_source(request, settings)
            samples.append(time.perf_counter() - started)
            assert result.ok, result.message
        out[kernel] = summary(samples)
    return out


def subprocess_seconds(script: str, args: list[str], env: dict[str, str], timeout: float) -> float | str:
    # From a file, not `python -c`: Triton and the CuTe DSL read each kernel's source with `inspect`.
    path = Path(tempfile.mkdtemp()) / "bench_script.py"
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)
    if done.returncode != 0:
        return f"failed: {done.stderr.strip()[-500:]}"
    return float(done.stdout.strip().splitlines()[-1])


def fresh_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def triton(repeats: int) -> dict:
    out = {}
    for kernel in CUDA:
        samples = [subprocess_seconds(TRITON, [kernel], fresh_env(TRITON_CACHE_DIR=tempfile.mkdtemp()), 300)
                   for _ in range(repeats)]
        out[kernel] = summary([s for s in samples if isinstance(s, float)]) if all(
            isinstance(s, float) for s in samples) else {"error": next(s for s in samples if isinstance(s, str))}
    return out


def cute(repeats: int) -> dict:
    import importlib.util

    if importlib.util.find_spec("cutlass") is None:
        return {"skipped": "nvidia-cutlass-dsl is not installed"}
    out = {}
    for kernel in ("vector_add", "scale_relu"):  # the row softmax needs a reduction written in CuTe: not here
        samples = [subprocess_seconds(CUTE, [kernel], fresh_env(CUTE_DSL_CACHE_DIR=tempfile.mkdtemp(),
                                                                CUTE_DSL_DISABLE_FILE_CACHING="1"), 300)
                   for _ in range(repeats)]
        out[kernel] = summary([s for s in samples if isinstance(s, float)]) if all(
            isinstance(s, float) for s in samples) else {"error": next(s for s in samples if isinstance(s, str))}
    return out


def load_inline(repeats: int) -> dict:
    jobs = []
    for kernel, (_, source) in CUDA.items():
        path = Path(tempfile.mkdtemp()) / f"{kernel}.cu"
        path.write_text(source)
        for r in range(repeats if kernel == "vector_add" else 1):
            env = fresh_env(TORCH_EXTENSIONS_DIR=tempfile.mkdtemp(), MAX_JOBS="2")
            jobs.append((kernel, [f"bench_{kernel}_{r}", kernel, str(path)], env))
    with ThreadPoolExecutor(len(jobs)) as pool:
        samples = list(pool.map(lambda job: subprocess_seconds(LOAD_INLINE, job[1], job[2], 500), jobs))
    out: dict = {"parallel_builds": len(jobs), "max_jobs_per_build": 2, "host_cores": os.cpu_count()}
    for kernel in CUDA:
        mine = [s for (k, _, _), s in zip(jobs, samples, strict=True) if k == kernel]
        good = [s for s in mine if isinstance(s, float)]
        out[kernel] = summary(good) if good else {"error": mine[0]}
    return out


BACKENDS = ("nvrtc", "nvcc_cubin", "triton_first_call", "cute_dsl", "load_inline")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=10, help="NVRTC and nvcc repeats")
    parser.add_argument("--subprocess-repeats", type=int, default=3, help="Triton and CuTe DSL repeats")
    parser.add_argument("--load-inline-repeats", type=int, default=3, help="of the vector add; 1 for the others")
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help="comma-separated subset of " + ", ".join(BACKENDS))
    args = parser.parse_args()
    import torch

    wanted = args.backends.split(",")
    measure = {"nvrtc": lambda: in_process("nvrtc", args.repeats),
               "nvcc_cubin": lambda: in_process("nvcc", args.repeats),
               "triton_first_call": lambda: triton(args.subprocess_repeats),
               "cute_dsl": lambda: cute(args.subprocess_repeats)}
    with ThreadPoolExecutor(1) as pool:  # the slow builds run while the rest is measured (other cores)
        building = pool.submit(load_inline, args.load_inline_repeats) if "load_inline" in wanted else None
        time.sleep(1)
        results = {name: run() for name, run in measure.items() if name in wanted}
        if building is not None:
            results["load_inline"] = building.result()
    report = {"command": " ".join(["python", *sys.argv]), "gpu": torch.cuda.get_device_name(0),
              "torch": torch.__version__, "note": "load_inline builds ran in parallel processes (MAX_JOBS=2 each) "
              "while the other backends were measured one at a time", "results": results}
    ratios = {}
    for backend, per_kernel in results.items():
        for kernel, row in per_kernel.items():
            base = results.get("load_inline", {}).get(kernel, {})
            if isinstance(row, dict) and "median_s" in row and "median_s" in base:
                ratios[f"{backend}/{kernel}"] = base["median_s"] / row["median_s"]
    report["speedup_vs_load_inline"] = ratios
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    header = f"{'backend':18s} {'kernel':12s} {'median s':>10s} {'spread':>8s} {'n':>3s}"
    print(f"{header} {'x faster than load_inline':>26s}")
    for backend, per_kernel in results.items():
        for kernel, row in per_kernel.items():
            if isinstance(row, dict) and "median_s" in row:
                ratio = ratios.get(f"{backend}/{kernel}")
                print(f"{backend:18s} {kernel:12s} {row['median_s']:10.4f} {row['spread']:8.1%} {row['repeats']:3d} "
                      f"{'' if ratio is None else f'{ratio:26.0f}'}")
            elif isinstance(row, dict) and ("error" in row or "skipped" in row):
                print(f"{backend:18s} {kernel:12s} {row.get('error') or row.get('skipped')}")
            elif kernel == "skipped":
                print(f"{backend:18s} skipped: {row}")


if __name__ == "__main__":
    main()
