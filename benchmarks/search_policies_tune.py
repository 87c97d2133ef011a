"""MCTS's settings tuned on the search simulation, on seeds disjoint from the reported ones.

``search_policies.py`` reports seeds 0-199; this script searches seeds from ``--first-seed`` (100000 by default)
on. It measures greedy once, then MCTS at the current settings and at each candidate value of each setting in
``GRID``, one setting at a time (the others at their defaults), and, with ``--combine``, the combination of each
setting's best value. The score is the mean over the budgets of MCTS's geometric-mean ratio to greedy, with its
paired bootstrap interval. A default changes only with this file's evidence, written to ``--out``.

Run: ``python benchmarks/search_policies_tune.py --seeds 200 --jobs 2 --combine
--out benchmarks/results/search_policies_tuning.json``
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

from search_policies import bootstrap, run_seeds

from kernelpro.config import SearchSettings

GRID: dict[str, list] = {
    "c_puct": [0.25, 1.0, 2.0],
    "best_weight": [0.5, 0.9, 1.0],
    "fpu": [0.0, 0.2, 0.4],
    "widening": [1.0, 1.5, 3.0],
    "alpha": [0.3, 0.7],
    "branching": [0.0, 2.0],
    "virtual_loss": [0.5, 2.0],
    "dead_end_after": [2, 4],
    "plan_prior": [0.25, 1.0],
}


def log_ratio(greedy: dict, mcts: dict, budget: int) -> float:
    return math.log(mcts["runs"]["mcts"][budget]["best_true"]) - math.log(greedy["runs"]["greedy"][budget]["best_true"])


def score(greedy: list[dict], mcts: list[dict], budgets: list[int]) -> dict:
    pairs = list(zip(greedy, mcts, strict=True))
    diffs = [statistics.fmean(log_ratio(g, m, b) for b in budgets) for g, m in pairs]
    low, high = bootstrap(diffs, statistics.fmean)
    per_budget = {str(b): round(math.exp(statistics.fmean(log_ratio(g, m, b) for g, m in pairs)), 4)
                  for b in budgets}
    geomeans = {f"{name}_{b}": round(math.exp(statistics.fmean(math.log(r["runs"][name][b]["best_true"])
                                                               for r in runs)), 4)
                for b in budgets for name, runs in (("greedy", greedy), ("mcts", mcts))}
    return {"ratio": round(math.exp(statistics.fmean(diffs)), 4), "ci95": [round(math.exp(low), 4),
                                                                          round(math.exp(high), 4)],
            "per_budget": per_budget, "geomean_best": geomeans}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=100000)
    parser.add_argument("--budgets", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--batch", type=int, default=SearchSettings().batch_size)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--only", nargs="*", help="settings of GRID to try (all by default)")
    parser.add_argument("--set", nargs="*", default=[], help="base overrides, key=value")
    parser.add_argument("--combine", action="store_true", help="also try every setting's best value together")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    base = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    started = time.monotonic()

    def measure(overrides: dict) -> list[dict]:
        return run_seeds(seeds, args.budgets, args.batch, ["mcts"], {**base, **overrides}, args.jobs, False)

    greedy = run_seeds(seeds, args.budgets, args.batch, ["greedy"], base, args.jobs, False)
    rows = [{"overrides": {}, **score(greedy, measure({}), args.budgets)}]
    print(json.dumps(rows[-1]), flush=True)
    best_values: dict = {}
    for key in GRID if args.only is None else args.only:
        best = rows[0]
        for value in GRID[key]:
            rows.append({"overrides": {key: value}, **score(greedy, measure({key: value}), args.budgets)})
            print(json.dumps(rows[-1]), flush=True)
            if rows[-1]["ratio"] > best["ratio"]:
                best = rows[-1]
        if best is not rows[0]:
            best_values[key] = best["overrides"][key]
    if args.combine and best_values:
        rows.append({"overrides": best_values, **score(greedy, measure(best_values), args.budgets)})
        print(json.dumps(rows[-1]), flush=True)
    report = {"seeds": [seeds[0], seeds[-1]], "budgets": args.budgets, "base": base,
              "defaults": SearchSettings().model_dump(), "rows": rows, "elapsed_s": round(time.monotonic() - started)}
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
