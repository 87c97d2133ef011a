"""Does a forecast gate find faster kernels at an equal GPU budget? The search simulation, gated and not.

The world, the planner and the judge are ``search_policies.py``'s (the real policies driving a real
``VariantTree``). The gated search asks the coder for ``--copies`` candidates per expansion (each a variation of
the idea: its quality is the idea's plus N(0, ``COPY_NOISE``)), a simulated forecaster forecasts each, the real
``ForecastGate`` in ``select`` mode picks the top ``--select-k`` by expected class, and only those are judged
and counted against the budget. The ungated search judges one candidate per expansion, as today.

The simulated forecaster sees a candidate's true log speedup through Gaussian noise of scale ``sigma`` (a failure
looks like a 0.3x candidate) and answers the class probabilities of N(seen, sigma) over the class boundaries, so
it is calibrated and its sharpness is ``sigma``; ``sigma = inf`` is a forecaster that knows nothing (uniform).
Compare the sigma grid against the model-free forecaster's held-out error (``forecast_scores.py``).

Run: ``python benchmarks/search_gate.py --seeds 200 --out benchmarks/results/search_gate_sim.json``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from search_policies import bootstrap, world_for  # noqa: E402
from search_world import REFERENCE, load_problems  # noqa: E402

from kernelpro.config import SearchSettings  # noqa: E402
from kernelpro.forecast.classes import BOUNDARIES, from_probabilities  # noqa: E402
from kernelpro.forecast.gate import ForecastGate  # noqa: E402
from kernelpro.harness.ports import Proposal  # noqa: E402
from kernelpro.problem import Problem  # noqa: E402
from kernelpro.search.policies import build_policy  # noqa: E402
from kernelpro.search.tree import VariantTree  # noqa: E402

COPY_NOISE = 0.5
FAILURE_LOOKS_LIKE = 0.3


class NoisyForecaster:
    """Forecasts from the simulation's hidden truth, through noise (see the module's docstring)."""

    def __init__(self, truth: dict[str, float], sigma: float, seed: int) -> None:
        self.truth, self.sigma, self.rng = truth, sigma, random.Random(f"forecast:{seed}:{sigma}")
        self.name = f"noisy(sigma={sigma:g})"

    def forecast(self, items):
        out = []
        for item in items:
            if math.isinf(self.sigma):
                out.append(from_probabilities([1.0] * 8))
                continue
            true = self.truth[item.candidate_source] or FAILURE_LOOKS_LIKE
            seen = math.log(true) + self.rng.gauss(0, self.sigma)
            cuts = [0.0] + [_normal_cdf((math.log(b) - seen) / self.sigma) for b in BOUNDARIES] + [1.0]
            out.append(from_probabilities([max(0.0, hi - lo) for lo, hi in zip(cuts, cuts[1:], strict=False)]))
        return out


def _normal_cdf(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def gated_search(policy_name: str, seed: int, budget: int, batch: int, copies: int, select_k: int,
                 sigma: float | None) -> dict:
    """``sigma`` None: no gate, one candidate per expansion. Otherwise ``copies`` per expansion, the gate measures
    ``select_k``."""
    policy = build_policy(policy_name, SearchSettings(), uses_llm=True)
    world = world_for(seed)
    tree = VariantTree.with_root(REFERENCE)
    world.latent[tree.root.id] = world.root
    truth: dict[str, float] = {}
    gate = ForecastGate(NoisyForecaster(truth, sigma, seed), "select", select_k=select_k) if sigma else None
    problem = Problem(name="sim", source=REFERENCE)
    judged = written = 0
    while judged < budget:
        per = select_k if gate else 1
        proposed = policy.propose(tree, max(1, min(batch, (budget - judged) // per)))
        if not proposed:
            break
        if proposed[0].idea is None:
            for request in proposed:
                tree.add_ideas(request.parent_id, world.plan(tree, request.parent_id))
            continue
        children, outcomes = [], {}
        for e in proposed:
            first = tree.spawn_from(e.parent_id, e.idea, iteration=judged + 1)
            children.append(first)
            for copy in range(1, copies if gate else 1):
                title = f"{e.idea.description}~{copy}"
                base = world.planned[e.idea.description]
                world.planned[title] = dataclasses.replace(
                    base, title=title, quality=base.quality + world.rng("copy", title).gauss(0, COPY_NOISE))
                children.append(tree.spawn(e.parent_id, "", title, "llm", judged + 1, prior=e.idea.prior))
        for child in children:
            tree.write_code(child.id, f"class ModelNew:\n    pass  # {child.id}\n")
            outcomes[child.id] = world.judge(tree, child.id)
            truth[tree.get(child.id).source] = world.latent[child.id].speedup
        written += len(children)
        if gate:
            proposals = [Proposal(variant_id=c.id, parent_id=c.parent_id or "", idea=_family(c.idea),
                                  source=c.source, prior=c.prior) for c in children]
            chosen = set(gate.choose(problem, proposals))
        else:
            chosen = {c.id for c in children}
        for child in children:
            if child.id in chosen:
                tree.record(child.id, outcomes[child.id])
            else:
                tree.mark_gated(child.id, gate.why(child.id))
        judged += len(chosen)
        policy.observe(tree, [c.id for c in children if c.id in chosen])
    true_best = max([1.0] + [world.latent[v.id].speedup for v in tree if v.correct and v.kind != "reference"
                             and v.improves])
    return {"judged": judged, "written": written, "best_true": true_best}


def _family(idea: str) -> str:
    """The expansion a copy belongs to: its idea without the copy suffix."""
    return idea.split("~")[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--budgets", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--batch", type=int, default=SearchSettings().batch_size)
    parser.add_argument("--policy", default="mcts")
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--select-k", type=int, default=1)
    parser.add_argument("--sigmas", type=float, nargs="+", default=[0.25, 0.5, 1.0, math.inf])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    _, source = load_problems()
    started = time.monotonic()
    report: dict = {"problems": source, "seeds": args.seeds, "policy": args.policy, "copies": args.copies,
                    "select_k": args.select_k, "copy_noise": COPY_NOISE, "budgets": {}}
    for budget in args.budgets:
        seeds = range(args.seeds)
        plain = [gated_search(args.policy, s, budget, args.batch, 1, 1, None) for s in seeds]
        entry: dict = {"no_gate": _stats(plain)}
        for sigma in args.sigmas:
            gated = [gated_search(args.policy, s, budget, args.batch, args.copies, args.select_k, sigma)
                     for s in seeds]
            diffs = [math.log(g["best_true"]) - math.log(p["best_true"]) for g, p in zip(gated, plain, strict=True)]
            low, high = bootstrap(diffs, statistics.fmean)
            entry[f"gate_sigma_{sigma:g}"] = {**_stats(gated),
                                              "geomean_ratio_vs_no_gate": round(math.exp(statistics.fmean(diffs)), 4),
                                              "ratio_ci95": [round(math.exp(low), 4), round(math.exp(high), 4)]}
        report["budgets"][str(budget)] = entry
        print(f"budget {budget}: " + json.dumps(entry), flush=True)
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")


def _stats(runs: list[dict]) -> dict:
    logs = [math.log(r["best_true"]) for r in runs]
    return {"geomean_best_speedup": round(math.exp(statistics.fmean(logs)), 4),
            "mean_judged": round(statistics.fmean(r["judged"] for r in runs), 1),
            "mean_written": round(statistics.fmean(r["written"] for r in runs), 1)}


if __name__ == "__main__":
    main()
