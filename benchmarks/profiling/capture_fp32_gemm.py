"""Capture a real FP32 GEMM program with Nsight Compute for the tensor-core diagnoser's tests.

The program: a plain 16x16 shared-memory tiled SGEMM (two shared loads per FFMA, no register tiling, launched
through kernelpro.runtime) and torch.mm with TF32 off (cuBLAS's FP32 kernel), 4096x4096 float32 each, one call
of each inside an NVTX range after warm-ups. Profiled twice with kernelpro's own ncu command lines (clocks never
locked: `--clock-control none`): every section (`--set full`, what `kernelpro profile` collects) and stage 1's
metric list (what `kernelpro profile --quick` and optimisation runs collect). Writes, from the repository root:

    tests/data/ncu/programs/fp32_gemm.csv           ncu --import ... --csv --page raw --print-units base
    tests/data/ncu/programs/fp32_gemm_stage1.csv
    tests/data/ncu/reports/fp32_gemm.ncu-rep

    python benchmarks/profiling/capture_fp32_gemm.py [--n 4096] [--out tests/data/ncu]

and prints kernelpro's diagnosis of each. Needs a GPU, ncu and nvcc's NVRTC; about a minute.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NVTX_RANGE = "kernelpro_fp32_gemm"
TILE = 16
SOURCE = r"""
#define TILE 16
extern "C" __global__ void sgemm_smem_tiled(const float* A, const float* B, float* C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + col];
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
"""


def child(n: int) -> None:
    """The profiled program: warm-ups, a correctness check, then one call of each GEMM inside the NVTX range."""
    import torch

    from kernelpro.runtime import CudaKernel

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    a, b = (torch.randn(n, n, device="cuda") for _ in range(2))
    kernel = CudaKernel(SOURCE, "sgemm_smem_tiled")

    def tiled() -> torch.Tensor:
        c = torch.empty_like(a)
        kernel(grid=(n // TILE, n // TILE), block=(TILE, TILE), args=(a, b, c, n))
        return c

    for _ in range(3):
        tiled()
        torch.mm(a, b)
    torch.cuda.synchronize()
    reference = a[:64].double() @ b.double()
    for name, out in (("sgemm_smem_tiled", tiled()), ("torch.mm", torch.mm(a, b))):
        error = ((out[:64].double() - reference).abs().max() / reference.abs().max()).item()
        print(f"{name}: max error {error:.2e} of the largest value", flush=True)
        if error > 1e-4:
            sys.exit(f"{name} is wrong (TF32 or a bug): {error:.2e}")
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(NVTX_RANGE)
    tiled()
    torch.mm(a, b)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def capture(n: int, out: Path) -> int:
    from kernelpro.profiling.ncu_command import NcuOptions, find_ncu, import_command, ncu_command
    from kernelpro.profiling.service import diagnose_saved

    ncu = find_ncu()
    if ncu is None:
        print("ncu not found (PATH, /opt/nvidia/nsight-compute, the CUDA toolkit)", file=sys.stderr)
        return 2
    target = [sys.executable, str(Path(__file__).resolve()), "--child", "--n", str(n)]
    (out / "programs").mkdir(parents=True, exist_ok=True)
    (out / "reports").mkdir(parents=True, exist_ok=True)
    status = 0
    with tempfile.TemporaryDirectory() as work:
        for stage, name in ((2, "fp32_gemm"), (1, "fp32_gemm_stage1")):
            export = Path(work) / name
            command = ncu_command(ncu, target, export, NcuOptions(stage=stage), nvtx_range=NVTX_RANGE)
            print("$", " ".join(command), flush=True)
            run = subprocess.run(command, text=True, capture_output=True, check=False)
            print(run.stdout[-2000:], run.stderr[-2000:], sep="\n")
            report = export.with_suffix(".ncu-rep")
            if run.returncode != 0 or not report.exists():
                print(f"ncu failed for {name} (exit {run.returncode})", file=sys.stderr)
                status = 1
                continue
            csv_text = subprocess.run(import_command(ncu, report), text=True, capture_output=True,
                                      check=True).stdout
            csv_path = out / "programs" / f"{name}.csv"
            csv_path.write_text(csv_text)
            if stage == 2:
                shutil.copy(report, out / "reports" / f"{name}.ncu-rep")
            diagnosis, gpu = diagnose_saved(csv_path)
            print(f"\n# {csv_path} on {gpu.name}\n{diagnosis.render()}\n", flush=True)
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=4096, help="matrix size (a multiple of 16)")
    parser.add_argument("--out", type=Path, default=Path("tests/data/ncu"), help="where the captures go")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.n % TILE:
        parser.error(f"--n must be a multiple of {TILE}")
    if args.child:
        child(args.n)
        return 0
    return capture(args.n, args.out)


if __name__ == "__main__":
    sys.exit(main())
