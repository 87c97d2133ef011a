"""Does MCTS beat greedy at an equal judging budget? A seeded simulation of optimisation trees.

The policies are the real ``kernelpro.search`` code (``build_policy``), driving a real ``VariantTree`` through
its lifecycle API (``add_ideas``, ``spawn_from``, ``write_code``, ``record``) exactly as the optimisation graph
does: propose a batch, plan the variants that ask for ideas, judge the batch, propose again. Only the planner and
the judge are simulated, by ``search_world.py`` (its docstring states every modelling choice and its data: the
problems are CUDA-L1's H100 tasks with their measured CUDA-graph and custom-kernel plateaus).

Reported per budget (judged candidates; plans are not counted, they cost no GPU), over the same seeds for
every policy: the geometric-mean best true speedup of ``greedy``, ``beam`` and ``mcts`` (the best among the
candidates the judge called faster), two upper references, and MCTS against each policy, paired over seeds:

- ``oracle``: a clairvoyant beam over the same outcomes (it sees every idea's true result before choosing, keeps
  the ``ORACLE_WIDTH`` fastest variants and the ``ORACLE_WIDTH`` with the highest plateaus at each depth, up to
  ``ORACLE_DEPTH``), whose best variant's path is no longer than the budget (a path of ``d`` variants costs ``d``
  judgments): what a policy could have found in that budget; a lower bound of the true optimum.
- ``ceiling``: the problem's ``max(K, G)``, which no lineage passes whatever the budget.

One search runs to the largest budget and is read at each smaller one: the policies keep no state between
proposals and the world's outcomes are fixed, so the first 16 judged of a 64 run are the 16 run.

Run: ``python benchmarks/search_policies.py --seeds 200 --jobs 2 --out benchmarks/results/search_policies_sim.json``
(seeds 0-199; tuning used seeds from 100000 on, ``search_policies_tune.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import search_world  # noqa: E402
from search_world import REFERENCE, World, first_attempt_ratios, load_problems  # noqa: E402

from kernelpro.config import SearchSettings  # noqa: E402
from kernelpro.search.policies import build_policy  # noqa: E402
from kernelpro.search.tree import VariantTree  # noqa: E402

POLICIES = ("greedy", "beam", "mcts")
ORACLE_WIDTH, ORACLE_DEPTH = 12, 16


def world_for(seed: int) -> World:
    problems, _ = load_problems()
    return World(seed, random.Random(f"problem:{seed}").choice(problems), first_attempt_ratios())


def true_best(world: World, tree: VariantTree) -> float:
    return max([1.0] + [world.latent[v.id].speedup for v in tree
                        if v.correct and v.kind != "reference" and v.improves])


def search(policy_name: str, seed: int, budgets: list[int], batch: int, overrides: dict | None = None) -> dict:
    """One search to the largest budget; the true best, depth and plans read at each budget."""
    settings = SearchSettings(**(overrides or {}))
    policy = build_policy(policy_name, settings, uses_llm=True)
    world = world_for(seed)
    tree = VariantTree.with_root(REFERENCE)
    world.latent[tree.root.id] = world.root
    judged = plans = 0
    readings: dict[int, dict] = {}
    for budget in sorted(budgets):
        while judged < budget:
            proposed = policy.propose(tree, min(batch, budget - judged))
            if not proposed:
                break
            if proposed[0].idea is None:
                for request in proposed:
                    tree.add_ideas(request.parent_id, world.plan(tree, request.parent_id))
                    plans += 1
                continue
            children = [tree.spawn_from(e.parent_id, e.idea, iteration=judged + 1) for e in proposed]
            for child in children:
                tree.write_code(child.id, f"class ModelNew:\n    pass  # {child.id}\n")
                tree.record(child.id, world.judge(tree, child.id))
            judged += len(children)
            policy.observe(tree, [c.id for c in children])
        readings[budget] = {"judged": judged, "plans": plans, "best_true": true_best(world, tree),
                            "failed": sum(1 for v in tree if v.result and not v.correct),
                            "depth": max(v.depth for v in tree),
                            "graph_planned": any(i.kind == "graph" for i in world.planned.values())}
    return readings


def oracle(seed: int, budgets: list[int], max_plans: int) -> dict:
    """The clairvoyant beam's best true speedup whose path fits each budget (see the module's docstring), and the
    depth of its best variant."""
    world = world_for(seed)
    level, best, by_depth = [world.root], 1.0, [1.0]
    for depth in range(1, ORACLE_DEPTH + 1):
        found = [child for node in level for plan in range(max_plans) for idea in world.ideas(node, plan)
                 if (child := world.outcome(node, idea, depth)) is not None]
        best = max([best] + [c.speedup for c in found])
        by_depth.append(best)
        keep = {c.key: c for c in sorted(found, key=lambda c: -c.speedup)[:ORACLE_WIDTH]}
        keep.update({c.key: c for c in sorted(found, key=lambda c: -c.log_plateau)[:ORACLE_WIDTH]})
        level = list(keep.values())
        if not level:
            break
    return {b: by_depth[min(b, len(by_depth) - 1)] for b in budgets} | {
        "depth": next(d for d, found in enumerate(by_depth) if found >= by_depth[-1])}


def one_seed(job: tuple) -> dict:
    seed, budgets, batch, policies, overrides, with_oracle = job
    found = {name: search(name, seed, budgets, batch, overrides) for name in policies}
    world = world_for(seed)
    extra = {"ceiling": world.problem.ceiling, "graph_best": (world.problem.graph or 0.0) > world.problem.kernel}
    if with_oracle:
        extra["oracle"] = oracle(seed, budgets, SearchSettings(**(overrides or {})).max_plans)
    return {"seed": seed, "runs": found, **extra}


def run_seeds(seeds: list[int], budgets: list[int], batch: int, policies: list[str], overrides: dict | None,
              jobs: int, with_oracle: bool = True) -> list[dict]:
    work = [(s, budgets, batch, policies, overrides, with_oracle) for s in seeds]
    if jobs <= 1:
        return [one_seed(w) for w in work]
    with Pool(jobs) as pool:
        return pool.map(one_seed, work, chunksize=4)


def bootstrap(values: list[float], statistic, draws: int = 2000, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    stats = sorted(statistic([values[rng.randrange(len(values))] for _ in values]) for _ in range(draws))
    return [stats[int(0.025 * draws)], stats[int(0.975 * draws) - 1]]


def paired(a: list[float], b: list[float]) -> dict:
    """``a`` against ``b``, per seed, on the true best speedups: the geometric-mean ratio and P(a strictly
    better), each with its bootstrap interval."""
    diffs = [math.log(x) - math.log(y) for x, y in zip(a, b, strict=True)]
    wins = [1.0 if d > 1e-12 else 0.5 if abs(d) <= 1e-12 else 0.0 for d in diffs]
    low, high = bootstrap(diffs, statistics.fmean)
    p_low, p_high = bootstrap(wins, statistics.fmean, seed=1)
    return {"geomean_best_ratio": round(math.exp(statistics.fmean(diffs)), 4),
            "geomean_best_ratio_ci95": [round(math.exp(low), 4), round(math.exp(high), 4)],
            "p_beats": round(statistics.fmean(wins), 4), "p_beats_ci95": [round(p_low, 4), round(p_high, 4)],
            "p_strictly_better": round(sum(d > 1e-12 for d in diffs) / len(diffs), 4),
            "p_tie": round(sum(abs(d) <= 1e-12 for d in diffs) / len(diffs), 4)}


def geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def summarise(results: list[dict], budget: int, policies: list[str]) -> dict:
    best = {name: [r["runs"][name][budget]["best_true"] for r in results] for name in policies}
    entry: dict = {"geomean_ceiling": round(geomean([r["ceiling"] for r in results]), 4)}
    if "oracle" in results[0]:
        best["oracle"] = [r["oracle"][budget] for r in results]
        entry["oracle"] = {"geomean_best_speedup": round(geomean(best["oracle"]), 4),
                           "mean_depth": round(statistics.fmean(r["oracle"]["depth"] for r in results), 2)}
    for name in policies:
        runs = [r["runs"][name][budget] for r in results]
        logs = [math.log(v) for v in best[name]]
        entry[name] = {"geomean_best_speedup": round(math.exp(statistics.fmean(logs)), 4),
                       "mean_best_log_speedup": round(statistics.fmean(logs), 4),
                       "mean_best_log_speedup_ci95": [round(x, 4) for x in bootstrap(logs, statistics.fmean)],
                       "failed_fraction": round(sum(r["failed"] for r in runs) / max(1, sum(r["judged"] for r in runs)),
                                                3),
                       "mean_judged": round(statistics.fmean(r["judged"] for r in runs), 2),
                       "mean_depth": round(statistics.fmean(r["depth"] for r in runs), 2),
                       "mean_plans": round(statistics.fmean(r["plans"] for r in runs), 2)}
    if "mcts" in policies:
        for other in (p for p in [*policies, "oracle"] if p != "mcts" and p in best):
            entry[f"mcts_vs_{other}"] = paired(best["mcts"], best[other])
    if "oracle" in best and "greedy" in best:
        entry["oracle_vs_greedy"] = paired(best["oracle"], best["greedy"])
    entry["by_best_approach"] = by_best_approach(results, budget, policies, best)
    return entry


def by_best_approach(results: list[dict], budget: int, policies: list[str], best: dict) -> dict:
    """Where the room lies: the problems whose best approach is a CUDA graph (``G > K``) apart from the rest, with
    the share of each policy's searches whose planner ever proposed a graph idea."""
    split: dict = {}
    for label, wanted in (("graph", True), ("kernel", False)):
        rows = [i for i, r in enumerate(results) if r["graph_best"] == wanted]
        if not rows:
            continue
        split[label] = {"problems": len(rows),
                        "geomean_ceiling": round(geomean([results[i]["ceiling"] for i in rows]), 4),
                        **{f"geomean_{name}": round(geomean([best[name][i] for i in rows]), 4) for name in best},
                        **{f"graph_planned_{name}": round(statistics.fmean(
                            results[i]["runs"][name][budget]["graph_planned"] for i in rows), 3)
                           for name in policies}}
    return split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--budgets", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--batch", type=int, default=SearchSettings().batch_size)
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--jobs", type=int, default=1, help="processes over seeds")
    parser.add_argument("--assume", nargs="*", default=[], metavar="NAME=VALUE",
                        help="another value for one of search_world's assumptions (PRIOR_NOISE, GRAPH_SHARE, ...)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    assumed = {}
    for item in args.assume:
        name, _, value = item.partition("=")
        if not hasattr(search_world, name) or not name.isupper():
            raise SystemExit(f"--assume: search_world has no assumption {name!r}")
        assumed[name] = float(value)
        setattr(search_world, name, float(value))  # the worker processes fork after this
    started, cpu = time.monotonic(), time.process_time()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    results = run_seeds(seeds, args.budgets, args.batch, args.policies, None, args.jobs)
    _, source = load_problems()
    report: dict = {"problems": source, "seeds": [seeds[0], seeds[-1]], "batch": args.batch,
                    "search_settings": SearchSettings().model_dump(), "assumed": assumed, "budgets": {}}
    for budget in args.budgets:
        report["budgets"][str(budget)] = entry = summarise(results, budget, args.policies)
        print(f"budget {budget}: " + json.dumps(entry), flush=True)
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    report["jobs"] = args.jobs
    print(f"{report['elapsed_s']} s wall, {time.process_time() - cpu:.0f} CPU-s in the parent")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
