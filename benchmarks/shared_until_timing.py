"""What holding the device lock shared until timing (``harness.share_until_timing``) takes out of a judgment's
exclusive hold on the device.

    python benchmarks/shared_until_timing.py --device cpu --out benchmarks/results/shared_until_timing_cpu.json
        [--problems tests/data/problems/matmul_relu.py ...]
        [--recipes compile_default,compile_max_autotune_no_cudagraphs]

Each recipe candidate (``torch.compile`` ones by default: their first call compiles) is judged on each problem
twice through one long-lived worker per mode, with the device lock on (on the CPU too): once with the whole job
holding the lock alone (``alone``), and once sharing it until timing (``shared``). Per verdict: the seconds in
all, those held alone (what a lane waiting for the device waits for), the first call and checks
(``correctness``), and the speedup with its interval, so the two modes' verdicts can be compared. What lanes on
one GPU gain in wall time follows from the seconds held alone; a suite with ``--share-until-timing``
(``suite_kernelbench.py``) measures it, with the waits the lock's turns add.
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
from kernelpro.recipes.catalogue import recipes_for  # noqa: E402

PROBLEMS = [ROOT / "tests" / "data" / "problems" / f"{name}.py" for name in ("matmul_relu", "softmax_wide")]


def judge_all(device: str, items: list[tuple], share: bool, timing_budget_s: float) -> list[dict]:
    settings = Settings()
    settings.harness.device_lock, settings.harness.device_lock_dir = "on", Path(tempfile.mkdtemp())
    settings.harness.share_until_timing, settings.harness.timing_budget_s = share, timing_budget_s
    rows = []
    with Pipeline(device, settings) as pipeline:
        for label, problem, source in items:
            [result] = pipeline.judge([(problem, source)])
            turn = result.details.get("device_turn")
            rows.append({"candidate": label, "mode": "shared" if share else "alone", "status": result.status,
                         "elapsed_s": result.elapsed_s,
                         "exclusive_s": turn["alone_s"] if turn else result.elapsed_s,
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

    alone = {r["candidate"]: r for r in rows if r["mode"] == "alone"}
    ratios = [r["exclusive_s"] / alone[r["candidate"]]["exclusive_s"] for r in rows
              if r["mode"] == "shared" and alone[r["candidate"]]["exclusive_s"]]
    summary = {"verdicts_per_mode": len(items),
               "alone": {"elapsed_s": total("alone", "elapsed_s"), "exclusive_s": total("alone", "exclusive_s")},
               "shared": {"elapsed_s": total("shared", "elapsed_s"), "exclusive_s": total("shared", "exclusive_s")},
               "exclusive_shared_over_alone_median": round(statistics.median(ratios), 3) if ratios else None,
               "exclusive_shared_over_alone_range": [round(min(ratios), 3), round(max(ratios), 3)] if ratios else None}
    report = {"command": " ".join(sys.argv), "device": args.device, "python": platform.python_version(),
              "wall_s": round(time.monotonic() - started, 1), "summary": summary, "verdicts": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
