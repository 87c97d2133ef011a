"""Does MCTS beat greedy at an equal judging budget? A seeded simulation of optimisation trees.

The policies are the real ``kernelpro.search`` code (``build_policy``), driving a real ``VariantTree`` through
its lifecycle API (``add_ideas``, ``spawn_from``, ``write_code``, ``record``) exactly as the optimisation graph
does: propose a batch, plan the variants that ask for ideas, judge the batch, propose again. Only the planner
and the judge are simulated:

- **A problem's ceiling** (the best speedup reachable on it) is drawn from the final speedups that CUDA-L1's
  released kernels measured on an H100 (``/work/cuda_l1_release/current_h100.json``: 227 scored KernelBench
  tasks of levels 1-3, median 1.36x; winsorised at the 95th percentile, 10.9x, so a 368x outlier does not
  dominate the means). A ceiling of 1.02x or less is a problem with nothing to gain.
- **An idea** has a latent quality ``q`` (standard normal): the planner's prior sees it through noise
  (``PRIOR_NOISE``), ranks its ideas by what it sees, and states an expected speedup from it.
- **A child's outcome**, judged: it fails (compile error, incorrect) with a probability that falls with ``q``
  and rises with depth (``FAIL_BASE``...); otherwise its log speedup over its parent is a fraction of the
  headroom left below the ceiling, ``u * (log ceiling - log parent)``, with ``u`` drawn from ``Beta(a, b)``
  shifted by ``q``, and negative (slower) with a probability that falls with ``q``: gains shrink as a lineage
  nears the ceiling, so every subtree plateaus. A subtree also inherits an "approach" quality from its parent
  (a random walk), so some subtrees are worth deepening and some are not.
- Outcomes are common random numbers: the same idea at the same node gives the same outcome whichever policy
  tries it, so the policies differ only in what they choose to try.
- The judge adds measurement noise (3 % log-normal) and calls a speedup ``faster`` above 1.02x.

The failure and gain parameters are assumptions, not measurements (no per-step data of real searches is
available to us); they are chosen so a judged candidate fails about 35-45 % of the time, as KernelBench's
published LLM baselines do at level 1-2, and so greedy's mean best speedup sits near CUDA-L1's median.

Run: ``python benchmarks/search_policies.py --seeds 200 --out benchmarks/results/search_policies_sim.json``
(about two minutes on one core).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelpro.config import SearchSettings  # noqa: E402
from kernelpro.harness.result import EvalResult  # noqa: E402
from kernelpro.search.policies import build_policy  # noqa: E402
from kernelpro.search.priors import rank_priors  # noqa: E402
from kernelpro.search.tree import Idea, VariantTree  # noqa: E402

RELEASE = Path("/work/cuda_l1_release/current_h100.json")
REFERENCE = "class Model:\n    pass\n"
IDEAS_PER_PLAN = 5
PRIOR_NOISE = 1.0  # the planner's view of an idea's quality: q + N(0, PRIOR_NOISE)
FAIL_BASE, FAIL_QUALITY, FAIL_DEPTH = -0.45, 0.6, 0.08  # P(fail) = sigmoid(FAIL_BASE - FAIL_QUALITY*q + FAIL_DEPTH*d)
GAIN_A, GAIN_B, GAIN_QUALITY = 1.2, 3.0, 0.15  # u ~ Beta(a, b) + GAIN_QUALITY * q, clipped to [0, 1]
WORSE_BASE, WORSE_QUALITY = 0.3, 0.12  # P(slower than the parent) = WORSE_BASE - WORSE_QUALITY * q, in [0.05, 0.6]
APPROACH_STEP = 0.5  # a child's approach quality: its parent's plus N(0, APPROACH_STEP)
SWITCH = 0.25  # P(a child below the first level starts a new approach, with its own ceiling)
REACH = 1.5  # a new approach reaches sigmoid(REACH * q) of the problem's log ceiling
NOISE = 0.03
POLICIES = ("greedy", "beam", "mcts")


def ceilings() -> tuple[list[float], str]:
    """The empirical final speedups, winsorised at their 95th percentile."""
    data = json.loads(RELEASE.read_text())
    scores = sorted(float(e["score"]) for entries in data.values() for e in entries if e.get("score"))
    cap = scores[int(0.95 * (len(scores) - 1))]
    return [min(s, cap) for s in scores], f"{RELEASE.name}: {len(scores)} scores, winsorised at {cap:.3g}x"


@dataclass
class Latent:
    """What the simulation knows of a variant and the judge does not: its true speedup and its approach."""

    speedup: float
    approach: float
    key: str
    log_ceiling: float = 0.0
    """The lineage's own ceiling: refinements of one approach plateau below it."""


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class World:
    """One simulated problem: its ceiling, the latent truth of every variant, the planner and the judge."""

    def __init__(self, seed: int, ceiling: float) -> None:
        self.seed, self.ceiling = seed, ceiling
        self.latent: dict[str, Latent] = {}
        self.quality: dict[str, float] = {}  # idea -> its latent quality, hidden from the search

    def rng(self, *key: object) -> random.Random:
        return random.Random(":".join(map(str, (self.seed, *key))))

    def plan(self, tree: VariantTree, variant_id: str) -> list[Idea]:
        variant = tree.get(variant_id)
        node = self.latent[variant_id]
        rng = self.rng("plan", node.key, variant.plans)
        drafted = []
        for index in range(IDEAS_PER_PLAN):
            quality = node.approach + rng.gauss(0, 1)
            seen = quality + rng.gauss(0, PRIOR_NOISE)
            expected = math.exp(0.15 * seen + 0.1)
            title = f"{node.key}.{variant.plans}.{index}"
            self.quality[title] = quality
            drafted.append((seen, Idea(title=title, description=title, expected_speedup=expected)))
        drafted.sort(key=lambda pair: -pair[0])  # the planner ranks what it believes best first
        return rank_priors([idea for _, idea in drafted])

    def judge(self, tree: VariantTree, child_id: str) -> EvalResult:
        child = tree.get(child_id)
        parent = self.latent[child.parent_id]
        title = child.idea
        q = self.quality[title]
        rng = self.rng("outcome", title)
        approach = parent.approach + rng.gauss(0, APPROACH_STEP)
        if rng.random() < sigmoid(FAIL_BASE - FAIL_QUALITY * q + FAIL_DEPTH * child.depth):
            self.latent[child_id] = Latent(0.0, approach, title, parent.log_ceiling)
            return EvalResult(status="incorrect", reason="mismatch", message="simulated failure")
        log_ceiling = parent.log_ceiling
        if child.depth == 1 or rng.random() < SWITCH:  # a new approach, with its own plateau
            log_ceiling = sigmoid(REACH * q) * math.log(self.ceiling)
        headroom = max(0.0, log_ceiling - math.log(parent.speedup))
        u = min(1.0, max(0.0, rng.betavariate(GAIN_A, GAIN_B) + GAIN_QUALITY * q))
        worse = rng.random() < min(0.6, max(0.05, WORSE_BASE - WORSE_QUALITY * q))
        step = -abs(rng.gauss(0, 0.3)) if worse else u * headroom
        speedup = parent.speedup * math.exp(step)
        self.latent[child_id] = Latent(speedup, approach + 0.2 * q, title, log_ceiling)
        measured = speedup * math.exp(rng.gauss(0, NOISE))
        verdict = "faster" if measured > 1.02 else ("slower" if measured < 0.98 else "same")
        return EvalResult(status="ok", correct=True, speedup=measured,
                          speedup_ci95=[measured * 0.97, measured * 1.03], speed_verdict=verdict)


def search(policy_name: str, seed: int, ceiling: float, budget: int, batch: int) -> dict:
    settings = SearchSettings()
    policy = build_policy(policy_name, settings, uses_llm=True)
    world = World(seed, ceiling)
    tree = VariantTree.with_root(REFERENCE)
    world.latent[tree.root.id] = Latent(1.0, 0.0, "r")
    judged = plans = 0
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
    best = tree.best()
    true_best = max([1.0] + [world.latent[v.id].speedup for v in tree if v.correct and v.kind != "reference"
                             and v.improves])
    return {"judged": judged, "plans": plans, "best_measured": best.speedup if best else 1.0,
            "best_true": true_best, "failed": sum(1 for v in tree if v.result and not v.correct),
            "depth": max(v.depth for v in tree)}


def bootstrap(values: list[float], statistic, draws: int = 2000, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    stats = sorted(statistic([values[rng.randrange(len(values))] for _ in values]) for _ in range(draws))
    return [stats[int(0.025 * draws)], stats[int(0.975 * draws) - 1]]


def compare(runs: dict[str, list[dict]], a: str, b: str) -> dict:
    """Paired over seeds: ``a`` against ``b`` on the true best speedup each found."""
    diffs = [math.log(x["best_true"]) - math.log(y["best_true"]) for x, y in zip(runs[a], runs[b], strict=True)]
    wins = [1.0 if d > 1e-12 else 0.5 if abs(d) <= 1e-12 else 0.0 for d in diffs]
    ratio = math.exp(statistics.fmean(diffs))
    low, high = bootstrap(diffs, statistics.fmean)
    p_low, p_high = bootstrap(wins, statistics.fmean, seed=1)
    return {"geomean_best_ratio": round(ratio, 4), "geomean_best_ratio_ci95": [round(math.exp(low), 4),
                                                                              round(math.exp(high), 4)],
            "p_beats": round(statistics.fmean(wins), 4), "p_beats_ci95": [round(p_low, 4), round(p_high, 4)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--budgets", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--batch", type=int, default=SearchSettings().batch_size)
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    pool, source = ceilings()
    started = time.monotonic()
    report: dict = {"ceilings": source, "seeds": args.seeds, "batch": args.batch,
                    "search_settings": SearchSettings().model_dump(), "budgets": {}}
    for budget in args.budgets:
        runs = {name: [] for name in args.policies}
        drawn = [random.Random(f"ceiling:{seed}").choice(pool) for seed in range(args.seeds)]
        for seed, ceiling in enumerate(drawn):
            for name in args.policies:
                runs[name].append(search(name, seed, ceiling, budget, args.batch))
        entry: dict = {"geomean_ceiling": round(math.exp(statistics.fmean(math.log(c) for c in drawn)), 4)}
        for name, found in runs.items():
            logs = [math.log(r["best_true"]) for r in found]
            entry[name] = {"mean_best_log_speedup": round(statistics.fmean(logs), 4),
                           "mean_best_log_speedup_ci95": [round(x, 4) for x in bootstrap(logs, statistics.fmean)],
                           "geomean_best_speedup": round(math.exp(statistics.fmean(logs)), 4),
                           "failed_fraction": round(sum(r["failed"] for r in found) /
                                                    max(1, sum(r["judged"] for r in found)), 3),
                           "mean_depth": round(statistics.fmean(r["depth"] for r in found), 2),
                           "mean_plans": round(statistics.fmean(r["plans"] for r in found), 2)}
        for other in (p for p in args.policies if p != "mcts"):
            if "mcts" in runs:
                entry[f"mcts_vs_{other}"] = compare(runs, "mcts", other)
        report["budgets"][str(budget)] = entry
        print(f"budget {budget}: " + json.dumps(entry), flush=True)
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
