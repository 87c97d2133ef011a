"""How far the judge's speedups move between identical jobs, and whether their 95% intervals hold.

    PYTHONPATH=. python benchmarks/judge_noise.py --out benchmarks/results/judge_noise_h200.json

Each problem under ``benchmarks/problems/noise/`` is KernelBench-format, with one line marked ``# redundant
pass`` that changes nothing in the output. Per problem and per worker mode (``persistent``: one long-lived
worker judges the batch; ``fresh``: a new worker per job), one batch of jobs, as ``kernelpro eval REF C1..Cn``
runs it:

- ``--repeats`` copies of the reference itself (``self``): the true speedup is exactly 1;
- ``--repeats`` copies of the reference without its redundant pass (``lean``): a candidate of known, real gain.
  Its true ratio is taken from a separate, longer judgment (the finalists' settings: three times the rounds
  and the time cap, a third of the interval's target width) run after the batches, or read from an earlier
  report with ``--truth-from`` (one mode per call on a machine whose calls are short).

Reported per problem and mode: the reference's median across the batch's jobs and its drift ((max - min) /
median), the self speedups' range, how often the 95% interval contained 1 (self) or the long judgment's ratio
(lean), the calls made, and whether the reference was host-bound. Targets: self-vs-self within 0.97-1.03 on
GPU-bound problems and 0.95-1.05 on host-bound ones, the interval containing 1 in at least 95% of self jobs,
the reference's median drifting less than 3% across the jobs of a batch. Also the self speedups' spread
between jobs (``self_job_spread``, the standard deviation of their logs), pooled over the host-bound and the
GPU-bound problems in ``overall.job_spread_measured`` beside the ``harness.job_spread_*`` the intervals used.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.judge import judge_many  # noqa: E402
from kernelpro.problem import load_problem  # noqa: E402

PROBLEMS = ROOT / "benchmarks" / "problems" / "noise"
HOST_BOUND = {"matmul_scale_residual", "gemm_multiply_leakyrelu", "matmul_clamp_logsumexp_mish", "layernorm_gelu_small"}


def as_candidate(source: str, lean: bool) -> str:
    """The reference renamed ModelNew; ``lean`` also drops the line marked ``# redundant pass``."""
    lines = [line for line in source.splitlines() if not (lean and "# redundant pass" in line)]
    return "\n".join(lines).replace("class Model(nn.Module):", "class ModelNew(nn.Module):") + "\n"


def row(result: Any) -> dict[str, Any]:
    timing = result.details.get("timing", {})
    return {
        "status": result.status, "reason": result.reason, "speedup": result.speedup,
        "speedup_ci95": result.speedup_ci95, "speed_verdict": result.speed_verdict, "host_bound": result.host_bound,
        "reference_ms": result.reference_ms, "candidate_ms": result.candidate_ms,
        "reference_gpu_ms": result.reference.gpu_median_ms if result.reference else None,
        "reference_issue_ms": result.reference.issue_median_ms if result.reference else None,
        "rounds": timing.get("rounds"), "stopped_by": timing.get("stopped_by"),
        "host_checked": timing.get("host_checked"), "elapsed_s": result.elapsed_s,
        "message": result.message[:300] if result.status != "ok" else "",
    }


def contains(interval: list[float] | None, value: float) -> bool:
    return bool(interval) and interval[0] <= value <= interval[1]


def summarise(name: str, mode: str, self_rows: list[dict], lean_rows: list[dict], truth: float | None) -> dict:
    ok_self = [r for r in self_rows if r["status"] == "ok"]
    ok_lean = [r for r in lean_rows if r["status"] == "ok"]
    refs = [r["reference_ms"] for r in ok_self + ok_lean]
    speedups = [r["speedup"] for r in ok_self]
    host_bound = name in HOST_BOUND
    low, high = (0.95, 1.05) if host_bound else (0.97, 1.03)
    out = {
        "problem": name, "mode": mode, "expected": "host-bound" if host_bound else "gpu-bound",
        "reference_host_bound_share": sum(bool(r["host_bound"]) for r in ok_self + ok_lean) / max(1, len(refs)),
        "reference_median_ms": statistics.median(refs) if refs else None,
        "reference_drift": (max(refs) - min(refs)) / statistics.median(refs) if refs else None,
        "self_speedup_range": [min(speedups), max(speedups)] if speedups else None,
        "self_ci_contains_1": sum(contains(r["speedup_ci95"], 1.0) for r in ok_self),
        # the spread between identical jobs (the standard deviation of log self speedups), what the judge's
        # harness.job_spread_host / job_spread_gpu stand for, and their mean's offset from 1
        "self_job_spread": statistics.stdev(math.log(x) for x in speedups) if len(speedups) > 1 else None,
        "self_mean_log_offset": statistics.fmean(math.log(x) for x in speedups) if speedups else None,
        "self_jobs": len(self_rows), "self_ok": len(ok_self),
        "self_calls": {v: sum(r["speed_verdict"] == v for r in ok_self) for v in ("faster", "slower", "same",
                                                                                    "uncertain")},
        "lean_true_ratio": truth,
        "lean_speedup_range": [min(r["speedup"] for r in ok_lean), max(r["speedup"] for r in ok_lean)]
        if ok_lean else None,
        "lean_ci_contains_truth": sum(contains(r["speedup_ci95"], truth) for r in ok_lean) if truth else None,
        "lean_calls": {v: sum(r["speed_verdict"] == v for r in ok_lean) for v in ("faster", "slower", "same",
                                                                                    "uncertain")},
        "rounds_median": statistics.median([r["rounds"] for r in ok_self + ok_lean]) if refs else None,
    }
    out["targets"] = {
        "self_within_range": bool(speedups) and low <= min(speedups) and max(speedups) <= high,
        "drift_under_3pct": out["reference_drift"] is not None and out["reference_drift"] < 0.03,
    }
    return out


def earlier_truths(reports: list[Path]) -> dict[str, dict]:
    """Each problem's long judgment from earlier reports of this script (the last one given wins)."""
    found: dict[str, dict] = {}
    for path in reports:
        for run in json.loads(path.read_text(encoding="utf-8"))["runs"]:
            if run["mode"] == "long" and run["lean"] and run["lean"][0]["status"] == "ok":
                found[run["problem"]] = run["lean"][0]
    return found


def pooled_spread(summaries: list[dict]) -> float | None:
    """The self speedups' spread between jobs, pooled over problems (each about its own mean, so one problem's
    offset from 1 does not count as spread)."""
    squares = [s["self_job_spread"] ** 2 * (s["self_ok"] - 1) for s in summaries if s["self_job_spread"] is not None]
    dof = sum(s["self_ok"] - 1 for s in summaries if s["self_job_spread"] is not None)
    return math.sqrt(sum(squares) / dof) if dof else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--modes", nargs="+", default=["persistent", "fresh"])
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--problems", nargs="*", help="names under benchmarks/problems/noise (default: all)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--truth-from", type=Path, action="append", default=[],
                        help="an earlier report of this script on the same machine: its long judgments stand in for "
                             "this run's (a batch split over calls judges each problem's truth once)")
    args = parser.parse_args()
    earlier = earlier_truths(args.truth_from)

    names = args.problems or sorted(p.stem for p in PROBLEMS.glob("*.py"))
    if args.device == "cpu" and not args.problems:
        # sized for a GPU: elementwise_chain's 64 M elements took 4.4 minutes a job on a 2-core CPU
        names = [n for n in names if n in HOST_BOUND]
        print(f"on the CPU by default only the small problems ({', '.join(names)}); name the GPU-sized ones with "
              "--problems to run them, at minutes a job", file=sys.stderr)
    report: dict[str, Any] = {"command": " ".join(sys.argv), "host": platform.node(), "repeats": args.repeats,
                              "runs": [], "summary": []}
    if args.device == "cuda":
        import torch

        report["gpu"] = torch.cuda.get_device_name(0)
    for name in names:
        problem = load_problem(PROBLEMS / f"{name}.py")
        self_source, lean_source = as_candidate(problem.source, False), as_candidate(problem.source, True)
        assert self_source != lean_source, f"{name}: no line marked '# redundant pass'"
        batches: dict[str, tuple[list[dict], list[dict]]] = {}
        for mode in args.modes:
            settings = Settings()
            settings.harness.worker_mode = mode
            started = time.monotonic()
            results = judge_many(problem, [self_source] * args.repeats + [lean_source] * args.repeats,
                                 device=args.device, settings=settings)
            rows = [row(r) for r in results]
            batches[mode] = (rows[: args.repeats], rows[args.repeats:])
            report["runs"].append({"problem": name, "mode": mode, "wall_s": round(time.monotonic() - started, 2),
                                   "self": rows[: args.repeats], "lean": rows[args.repeats:]})
            print(f"{name} {mode}: {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        if name in earlier:
            long_row = {**earlier[name], "from": "--truth-from"}
        else:
            (long,) = judge_many(problem, [lean_source], device=args.device, settings=Settings().for_finalists())
            long_row = row(long)
        truth = long_row["speedup"] if long_row["status"] == "ok" else None
        report["runs"].append({"problem": name, "mode": "long", "lean": [long_row]})
        for mode, (self_rows, lean_rows) in batches.items():
            summary = summarise(name, mode, self_rows, lean_rows, truth)
            report["summary"].append(summary)
            print(json.dumps(summary), file=sys.stderr, flush=True)
        args.out.write_text(json.dumps(report, indent=1))  # after every problem: a cut-off run keeps what it has
    self_jobs = sum(s["self_ok"] for s in report["summary"])
    covered = sum(s["self_ci_contains_1"] for s in report["summary"])
    report["overall"] = {
        "self_ci_contains_1_share": covered / self_jobs if self_jobs else None,
        "lean_ci_contains_truth_share": (
            sum(s["lean_ci_contains_truth"] or 0 for s in report["summary"])
            / max(1, sum(sum(s["lean_calls"].values()) for s in report["summary"]))),
        "problems_meeting_self_range": sum(s["targets"]["self_within_range"] for s in report["summary"]),
        "problems_meeting_drift": sum(s["targets"]["drift_under_3pct"] for s in report["summary"]),
        "batches": len(report["summary"]),
        "job_spread_used": {"host": Settings().harness.job_spread_host, "gpu": Settings().harness.job_spread_gpu},
        "job_spread_measured": {kind: pooled_spread([s for s in report["summary"] if s["expected"] == kind])
                                for kind in ("host-bound", "gpu-bound")},
    }
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report["overall"]))


if __name__ == "__main__":
    main()
