"""What a shared warm-up (``harness.warm_up_shared``) takes out of the judge's exclusive turn on the device.

    python benchmarks/warm_up_shared.py --device cpu --out benchmarks/results/warm_up_shared_cpu.json
        [--problems tests/data/problems/matmul_relu.py ...]
        [--recipes compile_default,compile_max_autotune_no_cudagraphs]

Each recipe candidate (``torch.compile`` ones by default: their first call compiles) is judged on each problem
twice through one long-lived worker per mode, with the device lock on (on the CPU too): once as today, the whole
judgment exclusive (``cold``), and once with the warm-up first, its first call in a job of its own under the lock
held shared (``warm``). Per verdict: the seconds in all, the warm-up's, the exclusive rest (what a lane waiting
for the device waits for), the judgment's first call and checks (``correctness``), and the speedup with its
interval, so the two modes' verdicts can be compared. The worker's compile caches are its own, so the judgment
after a warm-up finds the warm-up's compiles there. What lanes on one GPU gain in wall time follows from the
exclusive seconds; a suite with ``KERNELPRO_HARNESS__WARM_UP_SHARED=true`` measures it.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.pipeline import Pipeline  # noqa: E402
from kernelpro.problem import load_problem  # noqa: E402
from kernelpro.search.recipes import recipes_for  # noqa: E402

PROBLEMS = [ROOT / "tests" / "data" / "problems" / f"{name}.py" for name in ("matmul_relu", "softmax_wide")]


def judge_all(device: str, items: list[tuple], warm: bool, timing_budget_s: float) -> list[dict]:
    settings = Settings()
    settings.harness.device_lock, settings.harness.device_lock_dir = "on", Path(tempfile.mkdtemp())
    settings.harness.warm_up_shared, settings.harness.timing_budget_s = warm, timing_budget_s
    rows = []
    with Pipeline(device, settings) as pipeline:
        for label, problem, source in items:
            [result] = pipeline.judge([(problem, source)])
            warm_s = result.details.get("warm_up_s", 0.0)
            rows.append({"candidate": label, "mode": "warm" if warm else "cold", "status": result.status,
                         "elapsed_s": result.elapsed_s, "warm_up_s": warm_s,
                         "exclusive_s": round((result.elapsed_s or 0.0) - warm_s, 3),
                         "correctness_s": (result.details.get("phase_s") or {}).get("correctness"),
                         "speedup": result.speedup, "speedup_ci95": result.speedup_ci95})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--problems", type=Path, nargs="*", default=PROBLEMS)
    parser.add_argument("--recipes", default="compile_default")
    parser.add_argument("--timing-budget-s", type=float, default=1.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    wanted = args.recipes.split(",")
    items = []
    for path in args.problems:
        problem = load_problem(path)
        found = {r.name: r.source for r in recipes_for(problem, "cuda" if args.device.startswith("cuda") else "cpu")}
        items += [(f"{path.stem}:{name}", problem, found[name]) for name in wanted if name in found]
    if not items:
        sys.exit(f"none of the recipes {wanted} applies to these problems on {args.device}")
    started = time.monotonic()
    rows = judge_all(args.device, items, False, args.timing_budget_s) + \
        judge_all(args.device, items, True, args.timing_budget_s)

    def total(mode: str, key: str) -> float:
        return round(sum(r[key] or 0.0 for r in rows if r["mode"] == mode), 2)

    cold = {r["candidate"]: r for r in rows if r["mode"] == "cold"}
    ratios = [r["exclusive_s"] / cold[r["candidate"]]["exclusive_s"] for r in rows
              if r["mode"] == "warm" and cold[r["candidate"]]["exclusive_s"]]
    summary = {"verdicts_per_mode": len(items),
               "cold": {"elapsed_s": total("cold", "elapsed_s"), "exclusive_s": total("cold", "exclusive_s")},
               "warm": {"elapsed_s": total("warm", "elapsed_s"), "exclusive_s": total("warm", "exclusive_s"),
                        "warm_up_s": total("warm", "warm_up_s")},
               "exclusive_warm_over_cold_median": round(statistics.median(ratios), 3) if ratios else None,
               "exclusive_warm_over_cold_range": [round(min(ratios), 3), round(max(ratios), 3)] if ratios else None}
    report = {"command": " ".join(sys.argv), "device": args.device, "python": platform.python_version(),
              "wall_s": round(time.monotonic() - started, 1), "summary": summary, "verdicts": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
