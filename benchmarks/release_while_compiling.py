"""What letting the device lock go while a job compiles (``harness.release_while_compiling``) saves lanes that
share one device until timing (``harness.share_until_timing``).

    python benchmarks/release_while_compiling.py --device cpu --out benchmarks/results/release_while_compiling_cpu.json
        [--problems tests/data/problems/matmul_relu.py ...] [--compiling compile_default]
        [--quick inference_mode] [--quick-repeats 3] [--rounds 2]

Two lanes (two pipelines, each with its own long-lived worker, on one device lock) at once, as a suite's lanes
are, out of step: one judges ``torch.compile`` candidates (``--compiling``, one per problem), whose first call
compiles for seconds; the other judges candidates that compile nothing (``--quick``, each problem's
``--quick-repeats`` times), which want to time while the first lane compiles. Each round runs both settings, in
alternating order: compiles holding the lock shared (``held``) and letting it go (``released``,
``harness.release_while_compiling``). Per verdict: the seconds held shared, let go, waited for the device (to
take it back and to be alone) and held alone, and the speedup with its interval; per setting and lane, the wall
time and the waits in all.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.pipeline import Pipeline  # noqa: E402
from kernelpro.problem import load_problem  # noqa: E402
from kernelpro.recipes.catalogue import recipes_for  # noqa: E402

PROBLEMS = [ROOT / "tests" / "data" / "problems" / f"{name}.py" for name in ("matmul_relu", "softmax_wide")]


# a verdict's waits for the device lock (details.device_turn)
WAITS = ("waited_shared_s", "waited_benchmark_s", "waited_alone_s")


def lane(device: str, settings: Settings, items: list[tuple], name: str, rows: list[dict]) -> None:
    with Pipeline(device, settings) as pipeline:
        for label, problem, source in items:
            [result] = pipeline.judge([(problem, source)])
            turn = result.details.get("device_turn") or {}
            rows.append({"lane": name, "candidate": label, "status": result.status, "elapsed_s": result.elapsed_s,
                         **{k: v for k, v in turn.items()}, "speedup": result.speedup,
                         "speedup_ci95": result.speedup_ci95})
            print(json.dumps(rows[-1]), flush=True)


def two_lanes(device: str, lanes: dict[str, list[tuple]], release: bool, timing_budget_s: float) -> dict:
    settings = Settings()
    settings.harness.device_lock, settings.harness.device_lock_dir = "on", Path(tempfile.mkdtemp())
    settings.harness.share_until_timing, settings.harness.timing_budget_s = True, timing_budget_s
    settings.harness.release_while_compiling = "on" if release else "off"  # "auto" would keep the CPU held
    rows: list[dict] = []
    walls: dict[str, float] = {}
    started = time.monotonic()

    def run(name: str, items: list[tuple]) -> None:
        lane(device, settings, items, name, rows)
        walls[name] = round(time.monotonic() - started, 1)

    threads = [threading.Thread(target=run, args=(name, items)) for name, items in lanes.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    def total(name: str, key: str) -> float:
        return round(sum(r.get(key) or 0.0 for r in rows if r["lane"] == name), 2)

    per_lane = {name: {"wall_s": walls[name],
                       "waited_s": round(sum(total(name, k) for k in WAITS), 2),
                       **{key: total(name, key) for key in ("shared_s", "released_s", "benchmarking_s", "alone_s")
                          + WAITS}}
                for name in lanes}
    return {"setting": "released" if release else "held", "wall_s": max(walls.values()), "lanes": per_lane,
            "verdicts": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--problems", type=Path, nargs="*", default=PROBLEMS)
    parser.add_argument("--compiling", default="compile_default")
    parser.add_argument("--quick", default="inference_mode")
    parser.add_argument("--quick-repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--timing-budget-s", type=float, default=1.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    lanes: dict[str, list[tuple]] = {"compiling": [], "quick": []}
    for path in args.problems:
        problem = load_problem(path)
        found = {r.name: r.source for r in recipes_for(problem, "cuda" if args.device.startswith("cuda") else "cpu")}
        for name, recipe, times in (("compiling", args.compiling, 1), ("quick", args.quick, args.quick_repeats)):
            if recipe in found:
                lanes[name] += [(f"{path.stem}:{recipe}", problem, found[recipe])] * times
    if not all(lanes.values()):
        sys.exit(f"{args.compiling} or {args.quick} applies to none of these problems on {args.device}")
    started = time.monotonic()
    runs = []
    for index in range(args.rounds):
        for release in ((False, True) if index % 2 == 0 else (True, False)):
            runs.append({"round": index + 1, **two_lanes(args.device, lanes, release, args.timing_budget_s)})

    def summary(setting: str) -> dict:
        mine = [r for r in runs if r["setting"] == setting]
        return {"rounds": len(mine), "wall_s": [r["wall_s"] for r in mine],
                **{f"{name}_{key}": [r["lanes"][name][key] for r in mine]
                   for name in lanes for key in ("wall_s", "waited_s", "released_s", "alone_s")}}

    report = {"command": " ".join(sys.argv), "device": args.device, "python": platform.python_version(),
              "cpus": os.cpu_count(), "wall_s": round(time.monotonic() - started, 1),
              "summary": {"held": summary("held"), "released": summary("released")}, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["summary"]))


if __name__ == "__main__":
    main()
