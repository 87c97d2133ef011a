"""Where a host-bound problem's time goes between identical jobs, outside the judge.

    PYTHONPATH=. python benchmarks/host_drift.py --out OUT.json [--jobs 12] [--calls 300]

A plain loop, no judge: per problem of ``benchmarks/problems/noise/`` and per placement, ``--jobs`` jobs, each
a new ``Model`` (seeded, as the judge builds one per job) timed over ``--calls`` calls on fresh inputs. Per
call: the host's time to issue it (``perf_counter`` around the call, the GPU idle before it) and the time to
finish it (after a synchronisation). Per job: both medians, the CPU the process ran on at its start and end
(``/proc/self/stat``), and that CPU's clock (``/proc/cpuinfo``, where the machine reports it).

Placements: ``free`` (the scheduler's choice) and ``pinned`` (the process bound to one core for all jobs).
The question it answers: does a job's issue time move with the core it lands on, with the new model
instance, or with neither (the host itself changing speed)?
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.problem import load_problem  # noqa: E402

PROBLEMS = ROOT / "benchmarks" / "problems" / "noise"
DEFAULT = ["matmul_scale_residual", "gemm_multiply_leakyrelu", "matmul_clamp_logsumexp_mish", "layernorm_gelu_small"]


def current_cpu() -> int:
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[36])  # field 39 of stat(5), counted after the command name


def cpu_mhz(cpu: int) -> float | None:
    for block in Path("/proc/cpuinfo").read_text().split("\n\n"):
        info = {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in block.splitlines())}
        if info.get("processor") == str(cpu):
            return float(info["cpu MHz"]) if "cpu MHz" in info else None
    return None


def op_costs(model: Any, namespace: dict[str, Any], calls: int = 50) -> dict[str, float]:
    """Host microseconds per call spent in each operator (self time), from torch's own profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in namespace["get_inputs"]()]
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            model(*inputs)
            torch.cuda.synchronize()
    costs = {e.key: e.self_cpu_time_total / calls for e in prof.key_averages()}
    return {k: round(v, 2) for k, v in sorted(costs.items(), key=lambda kv: -kv[1])[:12]}


def one_job(namespace: dict[str, Any], seed: int, calls: int, fresh_model: bool, model: Any,
            profile_ops: bool = False) -> dict[str, Any]:
    import torch

    torch.manual_seed(seed)
    if fresh_model or model is None:
        model = namespace["Model"](*namespace["get_init_inputs"]()).cuda().eval()
    cpu_start = current_cpu()
    issue, total = [], []
    with torch.no_grad():
        for index in range(calls + 20):
            inputs = [t.cuda() if isinstance(t, torch.Tensor) else t for t in namespace["get_inputs"]()]
            torch.cuda.synchronize()
            start = time.perf_counter_ns()
            model(*inputs)
            issued = time.perf_counter_ns()
            torch.cuda.synchronize()
            done = time.perf_counter_ns()
            if index >= 20:
                issue.append((issued - start) / 1e6)
                total.append((done - start) / 1e6)
    cpu_end = current_cpu()
    ops = op_costs(model, namespace) if profile_ops else None
    return {"issue_ms": statistics.median(issue), "total_ms": statistics.median(total), "cpu_start": cpu_start,
            "cpu_end": cpu_end, "ops_us": ops, "mhz": cpu_mhz(cpu_end), "loadavg": os.getloadavg()[0], "model": model}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--problems", nargs="*", default=DEFAULT)
    parser.add_argument("--profile-ops", action="store_true",
                        help="after each job, the host time per operator (torch.profiler) over 50 more calls")
    parser.add_argument("--blas", choices=["default", "cublas", "cublaslt"], default="default",
                        help="torch.backends.cuda.preferred_blas_library for every job")
    args = parser.parse_args()
    import torch

    if args.blas != "default":
        torch.backends.cuda.preferred_blas_library(args.blas)
    allowed = sorted(os.sched_getaffinity(0))
    report: dict[str, Any] = {"command": " ".join(sys.argv), "gpu": torch.cuda.get_device_name(0),
                              "cpus": len(allowed), "blas": args.blas, "runs": []}
    for name in args.problems:
        namespace: dict[str, Any] = {}
        exec(compile(load_problem(PROBLEMS / f"{name}.py").source, name, "exec"), namespace)
        for placement, fresh_model in (("free", True), ("pinned", True), ("pinned_same_model", False)):
            os.sched_setaffinity(0, set(allowed) if placement == "free" else {allowed[len(allowed) // 2]})
            model = None
            jobs = []
            for job in range(args.jobs):
                row = one_job(namespace, job, args.calls, fresh_model, model, args.profile_ops)
                model = row.pop("model")
                jobs.append(row)
            issues = [j["issue_ms"] for j in jobs]
            totals = [j["total_ms"] for j in jobs]
            summary = {"problem": name, "placement": placement,
                       "issue_drift": (max(issues) - min(issues)) / statistics.median(issues),
                       "total_drift": (max(totals) - min(totals)) / statistics.median(totals),
                       "issue_ms": [round(v, 4) for v in issues], "total_ms": [round(v, 4) for v in totals],
                       "cpus": sorted({j["cpu_start"] for j in jobs} | {j["cpu_end"] for j in jobs})}
            report["runs"].append({**summary, "jobs": jobs})
            print(json.dumps(summary), flush=True)
        os.sched_setaffinity(0, set(allowed))
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
