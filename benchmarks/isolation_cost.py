"""What the sandbox's walls cost per candidate: the same batch judged with ``harness.isolate`` on and off.

    PYTHONPATH=. python benchmarks/isolation_cost.py --device cuda --out benchmarks/results/isolation_cost_h200.json

Both runs judge the same honest candidates of one small elementwise problem, fully (correctness, guards,
timing), alternating isolated and unisolated batches ``--rounds`` times so drift on the host hits both alike.
Two worker modes are measured: ``persistent`` (the walls are paid once per worker; the audit hook on every
audited event) and ``fresh`` (a new worker, and new namespaces, per candidate). The figure is the median wall
time per candidate of each configuration, from the first static check to the last verdict, worker start-up
included, and the difference between isolated and not.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.isolation.probe import probe_worker_isolation  # noqa: E402
from kernelpro.harness.pipeline import Pipeline  # noqa: E402
from kernelpro.problem import parse_problem  # noqa: E402

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale


def get_inputs():
    return [torch.randn(1024, 1024)]


def get_init_inputs():
    return [2.0]
'''

CANDIDATE = '''import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x.clamp_min(0) * self.scale + {k} * 0.0
'''


def judge_batch(device: str, mode: str, isolate: bool, count: int, timing_budget_s: float) -> float:
    """Seconds per candidate for one batch of ``count`` distinct honest candidates."""
    settings = Settings()
    settings.harness.timing_budget_s = timing_budget_s
    settings.harness.worker_mode = mode
    settings.harness.isolate = isolate
    problem = parse_problem(PROBLEM, "isolation_cost")
    items = [(problem, CANDIDATE.format(k=k)) for k in range(count)]
    started = time.perf_counter()
    with Pipeline(device, settings) as pipeline:
        results = pipeline.judge(items)
    elapsed = time.perf_counter() - started
    bad = [r for r in results if r.status != "ok"]
    if bad:
        raise SystemExit(f"a candidate was not judged ok ({mode}, isolate={isolate}): {bad[0].message}")
    if isolate != bool(results[0].details.get("isolation", {}).get("applied")):
        raise SystemExit(f"isolation was {'not ' if isolate else ''}applied: {results[0].details.get('isolation')}")
    return elapsed / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--timing-budget-s", type=float, default=1.0,
                        help="harness.timing_budget_s of each judgment (the walls cost the same at any budget)")
    args = parser.parse_args()
    per_candidate: dict[str, list[float]] = {}
    for round_index in range(args.rounds):
        for mode in ("persistent", "fresh"):
            for isolate in (True, False):
                key = f"{mode}/{'isolated' if isolate else 'unisolated'}"
                seconds = judge_batch(args.device, mode, isolate, args.candidates, args.timing_budget_s)
                per_candidate.setdefault(key, []).append(seconds)
                print(f"round {round_index + 1}: {key} {seconds:.3f} s per candidate", flush=True)
        write(report(args, per_candidate), args.out)  # after every round, so a run cut short keeps its rounds
    print(json.dumps(report(args, per_candidate), indent=2))


def report(args: argparse.Namespace, per_candidate: dict[str, list[float]]) -> dict:
    medians = {key: statistics.median(values) for key, values in per_candidate.items()}
    return {
        "device": args.device, "host": platform.node(), "python": platform.python_version(),
        "walls": probe_worker_isolation(), "candidates_per_batch": args.candidates,
        "rounds": len(next(iter(per_candidate.values()))), "timing_budget_s": args.timing_budget_s,
        "seconds_per_candidate": per_candidate, "median_s": medians,
        "isolation_cost_s": {mode: medians[f"{mode}/isolated"] - medians[f"{mode}/unisolated"]
                             for mode in ("persistent", "fresh")},
    }


def write(record: dict, out: Path | None) -> None:
    if out:
        out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
