"""Judge every test candidate on a GPU, and measure how repeatable the judge's timing is.

    python benchmarks/judge_gpu.py --out benchmarks/results/judge_h200.json

Part 1 judges each candidate under tests/data/candidates on CUDA and records the verdict (a cheat must be
rejected with its reason, an honest candidate must pass). Part 2 judges a reference against itself
(speedup should be 1) and a fused Triton kernel against its reference, several times each, and reports the
median speedup and its run-to-run spread.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.judge import judge  # noqa: E402
from kernelpro.problem import load_problem  # noqa: E402

DATA = ROOT / "tests" / "data"
PROBLEM_FOR = {"constant": "constant_gelu", "precision": "softmax_wide", "zeros": "softmax_wide",
               "softmax": "softmax_wide", "split": "split_stats", "flatten": "flatten_view", "inplace": "inplace_relu",
               "matmul": "matmul_relu"}


def verdicts(settings: Settings) -> list[dict]:
    rows = []
    for path in sorted((DATA / "candidates").glob("*.py")):
        name = path.stem
        problem_name = next((v for k, v in PROBLEM_FOR.items() if k in name), "scale_relu")
        problem = load_problem(DATA / "problems" / f"{problem_name}.py")
        started = time.monotonic()
        result = judge(problem, path.read_bytes().decode("utf-8", "replace"), device="cuda", settings=settings)
        rows.append({"candidate": name, "problem": problem.name, "status": result.status, "reason": result.reason,
                     "speedup": result.speedup, "seconds": round(time.monotonic() - started, 2),
                     "message": result.message[:300]})
        print(f"{name:34s} {result.status:14s} {result.reason or '':22s} {rows[-1]['seconds']:6.1f}s", flush=True)
    return rows


def repeatability(settings: Settings, repeats: int) -> list[dict]:
    cases = [
        ("matmul_4096 vs itself", ROOT / "benchmarks/problems/matmul_4096.py", None),
        ("scale_relu_32m vs itself", ROOT / "benchmarks/problems/scale_relu_32m.py", None),
        ("scale_relu_32m vs fused Triton", ROOT / "benchmarks/problems/scale_relu_32m.py",
         DATA / "candidates/honest_triton_scale_relu.py"),
    ]
    rows = []
    for label, problem_path, candidate_path in cases:
        problem = load_problem(problem_path)
        source = (candidate_path.read_text() if candidate_path
                  else problem.source.replace("class Model(", "class ModelNew("))
        runs = []
        for _ in range(repeats):
            r = judge(problem, source, device="cuda", settings=settings)
            assert r.status == "ok", r.message
            runs.append({"speedup": r.speedup, "candidate_ms": r.candidate_ms, "reference_ms": r.reference_ms,
                         "candidate_spread": r.candidate.spread, "reference_spread": r.reference.spread,
                         "trials": r.candidate.trials, "host_ms": r.candidate.host_median_ms})
        speedups = [x["speedup"] for x in runs]
        cand = [x["candidate_ms"] for x in runs]
        row = {"case": label, "repeats": repeats, "median_speedup": statistics.median(speedups),
               "speedup_min": min(speedups), "speedup_max": max(speedups),
               "candidate_ms_median": statistics.median(cand),
               "candidate_ms_run_to_run_cv": statistics.pstdev(cand) / statistics.fmean(cand),
               "within_run_spread_median": statistics.median(x["candidate_spread"] for x in runs), "runs": runs}
        rows.append(row)
        print(f"{label:34s} speedup {row['median_speedup']:.3f} [{row['speedup_min']:.3f}, {row['speedup_max']:.3f}] "
              f"cand {row['candidate_ms_median']:.4g} ms, run-to-run CV {row['candidate_ms_run_to_run_cv']:.2%}",
              flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--parts", default="repeatability,verdicts", help="comma-separated parts to run")
    args = parser.parse_args()
    import torch

    settings = Settings()
    settings.harness.timeout_s = 20
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    report = {"command": " ".join(["python", *sys.argv]), "gpu": gpu, "torch": torch.__version__,
              "python": platform.python_version(), "settings": settings.harness.model_dump(mode="json")}
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after each part, so a cut-short run still leaves its numbers
        args.out.write_text(json.dumps(report, indent=1))

    if "repeatability" in args.parts:
        report["repeatability"] = repeatability(settings, args.repeats)
        save()
    if "verdicts" in args.parts:
        quick = settings.model_copy(deep=True)
        quick.harness.timing_budget_s = 2.0  # verdicts, not speed, are measured here
        report["verdict_settings"] = {"timing_budget_s": 2.0}
        report["verdicts"] = verdicts(quick)
        save()


if __name__ == "__main__":
    main()
