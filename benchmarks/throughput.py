"""Fully judged candidates per GPU-minute through the pipeline, against a serial load_inline loop.

    PYTHONPATH=. python benchmarks/throughput.py --out benchmarks/results/throughput_h200.json

The problem is a level-1-sized elementwise op (ReLU and scale over a 4096x4096 fp32 tensor). The candidates
are distinct NVRTC kernels (block size x elements per thread x vectorised loads), so the compile cache cannot
make them identical; each is compiled, checked on every correctness input set, guarded and timed against the
reference exactly as ``kernelpro eval`` does. The clock runs from the first static check to the last verdict,
worker start-up and compiles included. The baseline builds the same kind of kernel with
``torch.utils.cpp_extension.load_inline`` (a new build directory each) and judges candidates one after
another with a fresh worker each, as a KernelBench-style loop does; it takes about a minute per candidate, so
only ``--baseline-subset`` of them are timed and the rate is extrapolated (the JSON says so).
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.pipeline import Pipeline  # noqa: E402
from kernelpro.problem import parse_problem  # noqa: E402

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return [1.5]
'''

NVRTC_CANDIDATE = '''import torch
import torch.nn as nn

from kernelpro.runtime import CudaKernel

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(BLOCK) scale_relu(const float* __restrict__ x, float* __restrict__ y,
                                                                float scale, int n) {{
    const int per_block = BLOCK * PER_THREAD * VEC;
    int base = blockIdx.x * per_block + threadIdx.x * VEC;
    #pragma unroll
    for (int k = 0; k < PER_THREAD; ++k) {{
        int i = base + k * BLOCK * VEC;
        if (VEC == 4 && i + 3 < n) {{
            float4 v = *reinterpret_cast<const float4*>(x + i);
            v.x = fmaxf(v.x, 0.0f) * scale; v.y = fmaxf(v.y, 0.0f) * scale;
            v.z = fmaxf(v.z, 0.0f) * scale; v.w = fmaxf(v.w, 0.0f) * scale;
            *reinterpret_cast<float4*>(y + i) = v;
        }} else {{
            for (int j = 0; j < VEC; ++j)
                if (i + j < n) y[i + j] = fmaxf(x[i + j], 0.0f) * scale;
        }}
    }}
}}
"""


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.kernel = CudaKernel(SOURCE, "scale_relu", defines={{"BLOCK": "{block}", "PER_THREAD": "{per_thread}",
                                                                 "VEC": "{vec}"}})

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        per_block = {block} * {per_thread} * {vec}
        self.kernel(grid=((n + per_block - 1) // per_block,), block=({block},), args=(x, out, self.scale, n))
        return out
'''

LOAD_INLINE_CANDIDATE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void scale_relu_kernel(const float* __restrict__ x, float* __restrict__ y, float scale, int64_t n) {{
    int64_t i = (int64_t)blockIdx.x * {block} + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f) * scale;
}}

torch::Tensor scale_relu(torch::Tensor x, double scale) {{
    auto out = torch::empty_like(x);
    int64_t n = x.numel();
    scale_relu_kernel<<<(n + {block} - 1) / {block}, {block}, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), static_cast<float>(scale), n);
    return out;
}}
"""


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.ext = load_inline(name="scale_relu_{block}", cpp_sources="torch::Tensor scale_relu(torch::Tensor x, "
                               "double scale);", cuda_sources=CUDA_SOURCE, functions=["scale_relu"])

    def forward(self, x):
        return self.ext.scale_relu(x.contiguous(), self.scale)
'''


def nvrtc_candidates(count: int) -> list[str]:
    grid = itertools.product((128, 256, 512, 1024), (1, 2, 4, 8), (1, 4))
    return [NVRTC_CANDIDATE.format(block=b, per_thread=p, vec=v) for b, p, v in itertools.islice(grid, count)]


def run(settings: Settings, sources: list[str], mode: str) -> dict:
    settings = settings.model_copy(deep=True)
    settings.harness.worker_mode = mode
    problem = parse_problem(PROBLEM, name="scale_relu_4096")
    started = time.monotonic()
    with Pipeline("cuda", settings) as pipeline:
        results = pipeline.judge([(problem, source) for source in sources])
        stats = pipeline.stats
    wall = time.monotonic() - started
    gpus = len(pipeline.lanes)
    phases: dict[str, float] = {}
    for r in results:
        for name, seconds in r.details.get("phase_s", {}).items():
            phases[name] = phases.get(name, 0.0) + seconds / len(results)
    return {"mode": mode, "candidates": len(sources), "gpus": gpus, "wall_s": round(wall, 2),
            "per_gpu_minute": len(sources) / (wall / 60) / gpus,
            "statuses": {s: sum(r.status == s for r in results) for s in {r.status for r in results}},
            "speedups": [round(r.speedup, 3) if r.speedup else None for r in results],
            "mean_phase_s": {k: round(v, 4) for k, v in sorted(phases.items(), key=lambda kv: -kv[1])},
            "worker_starts": stats.worker_starts, "restarts": stats.restarts,
            "messages": [r.message[:200] for r in results if r.status != "ok"][:5]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--candidates", type=int, default=32)
    parser.add_argument("--baseline-subset", type=int, default=2)
    parser.add_argument("--fresh", action="store_true", help="also time the fresh-worker mode of the pipeline")
    args = parser.parse_args()
    import torch

    settings = Settings()
    settings.compile.cache_dir = Path(tempfile.mkdtemp(prefix="kernelpro-throughput-cache-"))  # nothing cached
    report = {"command": " ".join(["python", *sys.argv]), "gpu": torch.cuda.get_device_name(0),
              "torch": torch.__version__, "python": platform.python_version(),
              "harness": settings.harness.model_dump(mode="json")}
    report["pipeline"] = run(settings, nvrtc_candidates(args.candidates), "persistent")
    if args.fresh:
        settings.compile.cache_dir = Path(tempfile.mkdtemp(prefix="kernelpro-throughput-cache-"))
        report["pipeline_fresh_workers"] = run(settings, nvrtc_candidates(args.candidates), "fresh")
    # The baseline: one load_inline build per candidate, each judged in turn by a fresh worker.
    settings.compile.cache_dir = Path(tempfile.mkdtemp(prefix="kernelpro-throughput-cache-"))
    settings.harness.gpu_devices = [0]
    blocks = (128, 256, 512, 1024)[:args.baseline_subset]
    baseline = run(settings, [LOAD_INLINE_CANDIDATE.format(block=b) for b in blocks], "fresh")
    baseline["extrapolated"] = (f"{len(blocks)} of {args.candidates} load_inline candidates timed; the rate is "
                                "per candidate, so it extrapolates linearly")
    report["baseline_load_inline_serial"] = baseline
    report["ratio"] = report["pipeline"]["per_gpu_minute"] / baseline["per_gpu_minute"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    rows = [("pipeline (long-lived worker)", report["pipeline"])]
    rows += [("pipeline (fresh workers)", report["pipeline_fresh_workers"])] if args.fresh else []
    rows += [("serial load_inline (subset)", baseline)]
    print(f"{'':32s} {'cands':>6s} {'wall s':>8s} {'per GPU-min':>12s}  statuses")
    for label, row in rows:
        print(f"{label:32s} {row['candidates']:6d} {row['wall_s']:8.1f} {row['per_gpu_minute']:12.1f}  "
              f"{row['statuses']}")
    print("mean seconds per candidate inside the worker:", report["pipeline"]["mean_phase_s"])
    print(f"ratio pipeline / load_inline loop: {report['ratio']:.1f}x (target: >= 60 judged per GPU-minute)")


if __name__ == "__main__":
    main()
