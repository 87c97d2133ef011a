"""What a judgment costs and how repeatable it is: one kernelpro tree against another, in the same run.

    python benchmarks/judge_cost.py --device cuda --baseline .baseline --out benchmarks/results/judge_cost_h200.json

Each tree judges the same three problems, a candidate that is the reference's own code, ``--repeats`` times,
the trees alternating so drift on the host hits both alike:

- ``host_bound``: a small elementwise chain, a few microseconds of device work per call;
- ``gpu_bound``: a square float32 matrix product;
- ``large_output``: an elementwise op whose output is ``--large-gib`` GiB.

Every judgment runs in a process of its own (``python -c`` with that tree first on the path), so the trees never
share an interpreter. The figures per tree and problem are medians of wall seconds per judgment (worker start-up
included), of the seconds the judgment held the device (``EvalResult.device_s``), of the self-against-self
speedup, and the share of judgments whose 95% interval holds 1. The ratios of the current tree to the baseline
come with the range of the per-repeat ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBLEMS = {
    "host_bound": ("""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x * 2.0 + 1.0) - 0.5


def get_inputs():
    return [torch.randn(256, 256)]


def get_init_inputs():
    return []
"""),
    "gpu_bound": ("""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn({n}, {n}), torch.randn({n}, {n})]


def get_init_inputs():
    return []
"""),
    "large_output": ("""import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn({elements})]


def get_init_inputs():
    return []
"""),
}

# One judgment, in a process of its own: the tree under test first on the path, the verdict as the last line.
JUDGE_ONE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from kernelpro.config import Settings
from kernelpro.harness.judge import judge
from kernelpro.problem import parse_problem
source = open(sys.argv[2]).read()
settings = Settings()
settings.harness.timing_budget_s = float(sys.argv[4])
started = time.perf_counter()
result = judge(parse_problem(source, "judge_cost"), source.replace("class Model(", "class ModelNew("),
               device=sys.argv[3], settings=settings)
wall = time.perf_counter() - started
print(json.dumps({"status": result.status, "reason": result.reason, "wall_s": wall, "device_s": result.device_s,
                  "speedup": result.speedup, "ci95": result.speedup_ci95, "message": result.message[:300]}))
"""


def problem_sources(device: str, matmul_n: int, large_gib: float) -> dict[str, str]:
    elements = int(large_gib * 2**30 / 4)
    return {"host_bound": PROBLEMS["host_bound"],
            "gpu_bound": PROBLEMS["gpu_bound"].replace("{n}", str(matmul_n)),
            "large_output": PROBLEMS["large_output"].replace("{elements}", str(elements))}


def judge_once(tree: Path, problem_file: Path, device: str, budget_s: float, home: Path,
               settings_env: dict[str, str] | None = None) -> dict:
    env = {**os.environ, "HOME": str(home), "KERNELPRO_FORECAST__DATASET": str(home / "judged.jsonl"),
           "PYTHONPATH": os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])]),
           **(settings_env or {})}
    done = subprocess.run([sys.executable, "-c", JUDGE_ONE, str(tree), str(problem_file), device, str(budget_s)],
                          capture_output=True, text=True, env=env, cwd=home, timeout=1800)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"status": "harness_error", "reason": f"exit {done.returncode}", "message": done.stderr[-600:]}
    return json.loads(lines[-1])


def summarise(records: list[dict]) -> dict:
    ok = [r for r in records if r.get("status") == "ok"]
    if not ok:
        return {"judged": len(records), "ok": 0, "statuses": sorted({r.get("status") for r in records})}
    holds_one = [r for r in ok if r.get("ci95") and r["ci95"][0] <= 1.0 <= r["ci95"][1]]
    return {"judged": len(records), "ok": len(ok),
            "wall_s_median": round(statistics.median(r["wall_s"] for r in ok), 3),
            "device_s_median": round(statistics.median(r["device_s"] for r in ok), 3),
            "self_speedup_median": round(statistics.median(r["speedup"] for r in ok), 4),
            "self_speedup_range": [round(min(r["speedup"] for r in ok), 4), round(max(r["speedup"] for r in ok), 4)],
            "ci_holds_one": f"{len(holds_one)}/{len(ok)}"}


def ratios(current: list[dict], baseline: list[dict], key: str) -> dict | None:
    pairs = [(c[key], b[key]) for c, b in zip(current, baseline, strict=False)
             if c.get("status") == b.get("status") == "ok" and b[key] > 0]
    if not pairs:
        return None
    values = [c / b for c, b in pairs]
    return {"median": round(statistics.median(values), 3), "range": [round(min(values), 3), round(max(values), 3)],
            "pairs": len(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--baseline", type=Path, required=True, help="the other kernelpro tree (a checkout's root)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timing-budget-s", type=float, default=2.0)
    parser.add_argument("--matmul-n", type=int, default=4096)
    parser.add_argument("--large-gib", type=float, default=1.0)
    parser.add_argument("--problems", default="host_bound,gpu_bound,large_output")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:VAR=VALUE[,VAR=VALUE]",
                        help="the current tree again, under these settings' variables (e.g. "
                             "no_referee:KERNELPRO_HARNESS__REFEREE=false), judged in the same alternation")
    args = parser.parse_args()
    trees = {"current": ROOT, "baseline": args.baseline.resolve()}
    envs: dict[str, dict[str, str]] = {}
    for variant in args.variant:
        name, _, assignments = variant.partition(":")
        trees[name] = ROOT
        envs[name] = dict(pair.split("=", 1) for pair in assignments.split(",") if pair)
    sources = problem_sources(args.device, args.matmul_n, args.large_gib)
    records: dict[str, dict[str, list[dict]]] = {name: {} for name in trees}  # after the variants are known
    with tempfile.TemporaryDirectory(prefix="judge-cost-") as scratch:
        home = Path(scratch)
        for problem in args.problems.split(","):
            problem_file = home / f"{problem}.py"
            problem_file.write_text(sources[problem])
            for repeat in range(args.repeats):
                order = list(trees) if repeat % 2 == 0 else list(reversed(trees))
                for name in order:
                    record = judge_once(trees[name], problem_file, args.device, args.timing_budget_s, home,
                                        envs.get(name))
                    records[name].setdefault(problem, []).append(record)
                    print(f"{problem} {name} #{repeat + 1}: {record.get('status')} wall {record.get('wall_s', 0):.2f} s"
                          f" device {record.get('device_s', 0):.2f} s speedup {record.get('speedup')}"
                          f" {record.get('ci95')}", flush=True)
                    if record.get("status") != "ok":
                        print("   " + str(record.get("message"))[:300], flush=True)
            write(report(args, records), args.out)
    print(json.dumps(report(args, records)["ratios_current_over_baseline"], indent=2))


def report(args: argparse.Namespace, records: dict[str, dict[str, list[dict]]]) -> dict:
    problems = list(records["current"])
    return {
        "command": " ".join(sys.argv), "device": args.device, "host": platform.node(),
        "when": time.strftime("%Y-%m-%d %H:%M:%S"), "timing_budget_s": args.timing_budget_s,
        "summary": {name: {p: summarise(rs) for p, rs in per.items()} for name, per in records.items()},
        "ratios_current_over_baseline": {
            p: {"wall_s": ratios(records["current"][p], records["baseline"].get(p, []), "wall_s"),
                "device_s": ratios(records["current"][p], records["baseline"].get(p, []), "device_s")}
            for p in problems},
        "ratios_over_baseline": {
            name: {p: {"wall_s": ratios(records[name].get(p, []), records["baseline"].get(p, []), "wall_s"),
                       "device_s": ratios(records[name].get(p, []), records["baseline"].get(p, []), "device_s")}
                   for p in problems}
            for name in records if name != "baseline"},
        "records": records,
    }


def write(record: dict, out: Path | None) -> None:
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
