"""Time-best against energy-best: every variant of a few problems judged for time and energy, head to head.

    PYTHONPATH=. python benchmarks/energy_objective.py --out OUT.json [--problems NAME ...]

Per problem (KernelBench format, under ``benchmarks/problems/noise/``; by default two memory-bound and two
compute-bound ones), the variants are the reference without its redundant pass (``lean``) and every built-in
recipe for the device, each judged against the reference in one pipeline with ``harness.energy`` on: time
with its interval, joules per call and the energy ratio with their interval (paired NVML readings), watts,
and the SM clock, temperature and cap reasons of every reading.

Reported per problem: the time-best variant (highest speedup) and the energy-best (highest energy ratio),
and whether a variant saves at least 10 % of the energy of the time-best while its speedup lies within the
time-best's interval.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.judge_noise import as_candidate  # noqa: E402
from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.judge import judge_many  # noqa: E402
from kernelpro.problem import load_problem  # noqa: E402
from kernelpro.recipes.catalogue import recipes_for  # noqa: E402

PROBLEMS = ROOT / "benchmarks" / "problems" / "noise"
DEFAULT = ["elementwise_chain", "softmax_wide", "matmul_large", "conv_relu"]


def row(name: str, result: Any) -> dict[str, Any]:
    energy = result.details.get("energy", {})
    readings = energy.get("readings", {})
    return {
        "variant": name, "status": result.status, "reason": result.reason,
        "speedup": result.speedup, "speedup_ci95": result.speedup_ci95, "speed_verdict": result.speed_verdict,
        "reference_ms": result.reference_ms, "candidate_ms": result.candidate_ms,
        "energy_ratio": result.energy_ratio, "energy_ci95": result.energy_ci95,
        "energy_verdict": result.energy_verdict, "edp_ratio": result.edp_ratio, "edp_ci95": result.edp_ci95,
        "reference_j": result.reference.energy_j if result.reference else None,
        "candidate_j": result.candidate.energy_j if result.candidate else None,
        "reference_w": result.reference.power_w if result.reference else None,
        "candidate_w": result.candidate.power_w if result.candidate else None,
        "capped": energy.get("capped"), "replayed": energy.get("replayed"),
        "sm_clock_mhz": sorted({r.get("sm_clock_mhz") for rs in readings.values() for r in rs}),
        "temperature_c": sorted({r.get("temperature_c") for rs in readings.values() for r in rs}),
        "readings": readings, "message": result.message[:300] if result.status != "ok" else "",
    }


def head_to_head(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if r["status"] == "ok" and r["energy_ratio"] is not None]
    if not ok:
        return {"time_best": None, "energy_best": None}
    time_best = max(ok, key=lambda r: r["speedup"])
    energy_best = max(ok, key=lambda r: r["energy_ratio"])
    low = time_best["speedup_ci95"][0]
    savers = [r["variant"] for r in ok if r["speedup_ci95"][1] >= low and
              r["energy_ratio"] >= 1.10 * time_best["energy_ratio"] and r is not time_best]
    return {"time_best": time_best["variant"], "energy_best": energy_best["variant"],
            "saves_10pct_at_matched_speed": savers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--problems", nargs="*", default=DEFAULT)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeats", type=int, default=6, help="energy readings per model (harness.energy_repeats)")
    args = parser.parse_args()
    settings = Settings()
    settings.harness.energy, settings.harness.energy_repeats = True, args.repeats
    report: dict[str, Any] = {"command": " ".join(sys.argv), "host": platform.node(), "problems": []}
    for name in args.problems:
        problem = load_problem(PROBLEMS / f"{name}.py")
        variants = {"lean": as_candidate(problem.source, lean=True)}
        variants.update({recipe.name: recipe.source for recipe in recipes_for(problem, args.device)})
        started = time.monotonic()
        results = judge_many(problem, list(variants.values()), device=args.device, settings=settings)
        rows = [row(variant, result) for variant, result in zip(variants, results, strict=True)]
        entry = {"problem": name, "wall_s": round(time.monotonic() - started, 1), "variants": rows,
                 **head_to_head(rows)}
        report["problems"].append(entry)
        print(json.dumps({k: v for k, v in entry.items() if k != "variants"}), flush=True)
        for r in rows:
            print(f"  {r['variant']:32s} {r['status']:10s} speedup {r['speedup']} {r['speedup_ci95']} "
                  f"energy {r['energy_ratio']} {r['energy_ci95']} {r['candidate_w']} W", flush=True)
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
