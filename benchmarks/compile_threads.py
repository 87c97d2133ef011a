"""What a serial compile costs a torch.compile candidate: one recipe judged cold with Inductor's compile threads
at 1 (the worker's default) and at N, alternating.

    PYTHONPATH=. python benchmarks/compile_threads.py --out OUT.json [--device cuda] [--threads 1 16]
        [--recipe compile_max_autotune_no_cudagraphs] [--rounds 2] [PROBLEM.py ...]

The judge's workers get ``TORCHINDUCTOR_COMPILE_THREADS=1`` unless the caller sets it (``sandbox.worker_environment``),
so max-autotune compiles every kernel choice one after another, on the first call, inside the device lock: on the
H200 that was 35-60 GPU-seconds a KernelBench matmul (``results/suite_kernelbench_h200_graph_last``). Each
configuration gets empty Inductor and Triton caches of its own (a suite's first judgment of a problem is cold),
and a pipeline of its own. Reported per problem and configuration: the candidate's wall time in the worker
(``elapsed_s``: compile, checks and timing, all under the lock), its per-phase seconds, the verdict with its
interval, its guard findings and the worker restarts, so a compile pool the judge's checks object to shows here.
The default problems are the KernelBench level-1 matmuls the suite timed out on, when their inputs are there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.pipeline import Pipeline  # noqa: E402
from kernelpro.problem import load_problem  # noqa: E402
from kernelpro.recipes.catalogue import recipes_for  # noqa: E402

KERNELBENCH = ROOT / "benchmarks" / "inputs" / "kernelbench" / "KernelBench" / "level1"
DEFAULT = ["1_Square_matrix_multiplication_.py", "8_Matmul_with_irregular_shapes_.py",
           "9_Tall_skinny_matrix_multiplication_.py"]


def recipe_source(problem_path: Path, device: str, name: str) -> str:
    recipes = {r.name: r.source for r in recipes_for(load_problem(problem_path), device)}
    if name not in recipes:
        sys.exit(f"no recipe {name!r} for {problem_path.name} on {device}; there are: {', '.join(sorted(recipes))}")
    return recipes[name]


def judge_cold(problem_path: Path, source: str, device: str, threads: int, settings: Settings) -> dict[str, Any]:
    """One judgment with ``threads`` compile threads and caches nobody has written yet."""
    with tempfile.TemporaryDirectory(prefix=f"compile-threads-{threads}-") as cache:
        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(threads)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(Path(cache) / "inductor")
        os.environ["TRITON_CACHE_DIR"] = str(Path(cache) / "triton")
        started = time.monotonic()
        with Pipeline(device, settings) as pipeline:
            result = pipeline.judge([(load_problem(problem_path), source)])[0]
            stats = pipeline.stats
        return {"threads": threads, "status": result.status, "reason": result.reason,
                "message": result.message[:300], "speedup": result.speedup, "speedup_ci95": result.speedup_ci95,
                "elapsed_s": result.elapsed_s, "wall_s": round(time.monotonic() - started, 2),
                "phase_s": result.details.get("phase_s"),
                "guards": [(g.reason, g.severity) for g in result.guards],
                "worker_starts": stats.worker_starts, "restarts": stats.restarts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    parser.add_argument("--recipe", default="compile_max_autotune_no_cudagraphs")
    parser.add_argument("--rounds", type=int, default=2, help="Each configuration this many times, alternating.")
    parser.add_argument("--timing-budget-s", type=float, default=1.0, help="harness.timing_budget_s")
    args = parser.parse_args()
    problems = args.problems or [KERNELBENCH / name for name in DEFAULT]
    missing = [str(p) for p in problems if not p.exists()]
    if missing:
        sys.exit(f"no such problem: {', '.join(missing)} (extract KernelBench with suite_kernelbench.py --extract)")
    settings = Settings()
    settings.harness.timing_budget_s = args.timing_budget_s
    report: dict[str, Any] = {"command": " ".join(sys.argv), "host": platform.node(), "cpus": os.cpu_count(),
                              "device": args.device, "recipe": args.recipe, "problems": []}
    for path in problems:
        source = recipe_source(path, args.device, args.recipe)
        runs = []
        for round_index in range(args.rounds):
            order = args.threads if round_index % 2 == 0 else list(reversed(args.threads))
            for threads in order:
                run = judge_cold(path, source, args.device, threads, settings)
                runs.append({"round": round_index + 1, **run})
                print(f"{path.stem} round {round_index + 1} threads {threads}: {run['status']} "
                      f"{run['speedup']} {run['speedup_ci95']} in {run['elapsed_s']} s "
                      f"(restarts {run['restarts']}, guards {run['guards']})", flush=True)
        medians = {str(t): statistics.median(r["elapsed_s"] for r in runs if r["threads"] == t and r["elapsed_s"])
                   for t in args.threads if any(r["threads"] == t and r["elapsed_s"] for r in runs)}
        report["problems"].append({"problem": path.stem, "runs": runs, "median_elapsed_s": medians})
        args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps({p["problem"]: p["median_elapsed_s"] for p in report["problems"]}))


if __name__ == "__main__":
    main()
