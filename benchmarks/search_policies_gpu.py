"""One real `kernelpro optimize` run per search policy on a GPU, with a replayed model, at equal budgets.

The loopback OpenAI-compatible test server (``tests/support/openai_server.py``) plays every agent: the planner
proposes three ideas, the coder answers with real LLM-written candidates (CUDA-L1's released kernels for the
task, its first and its current version, in turn), the critic finds them credible. The candidates are judged,
profiled and re-judged by the real pipeline on the GPU, in batches. This shows the batched graph working on a
GPU with each policy; with two candidates per task it is not evidence of search quality (the simulation,
``search_policies.py``, is).

Prepare the inputs here (they are gitignored and small), then run on the GPU host from the repository root:

    python benchmarks/search_policies_gpu.py prepare            # writes benchmarks/inputs/search_policies/
    python benchmarks/search_policies_gpu.py run --out "$OUT"   # on the GPU: $OUT/search_policies_h200.json
    python benchmarks/search_policies_gpu.py run --out "$OUT" --cases L1_T001   # one case per call
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.replayed_agents import loopback_environment, replay  # noqa: E402
from kernelpro import exit_codes  # noqa: E402
from tests.support.openai_server import OpenAIServer  # noqa: E402

INPUTS = ROOT / "benchmarks" / "inputs" / "search_policies"
CASES = ("L1_T001", "L2_T001", "L3_T016")  # a matmul, a fused conv block, a small network
POLICIES = ("greedy", "beam", "mcts")


def prepare(cases_dir: Path) -> None:
    for case in CASES:
        target = INPUTS / case
        target.mkdir(parents=True, exist_ok=True)
        kernels = {}
        for version in ("first", "current"):
            source = cases_dir / f"{version}_{case}"
            kernels[version] = (source / "candidate.py").read_text()
            (target / f"{version}.py").write_text(kernels[version])
            if version == "current":
                (target / "reference.py").write_text((source / "reference.py").read_text())
                (target / "meta.json").write_text((source / "meta.json").read_text())
        same = kernels["first"] == kernels["current"]
        # a case whose two releases are one kernel replays a single candidate: its runs show the graph, not a choice
        print(f"prepared {target}" + (" (its first and current kernels are the same code)" if same else ""))


def run(out: Path, max_iters: int, batch: int, cases: list[str], policies: list[str], extra: list[str],
        device: str = "cuda") -> None:
    report: dict = {"device": device, "max_iters": max_iters, "batch_size": batch, "extra_args": extra, "runs": []}
    out.mkdir(parents=True, exist_ok=True)
    for case in cases:
        folder = INPUTS / case
        candidates = [(folder / f"{v}.py").read_text() for v in ("first", "current")]
        for policy in policies:
            with OpenAIServer() as server, tempfile.TemporaryDirectory() as scratch:
                coded = iter(range(10_000))
                replay(server, lambda body, c=candidates, n=coded: c[next(n) % len(c)])
                env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
                env.update(loopback_environment(server, str(Path(scratch) / "memory")))
                env["KERNELPRO_SEARCH__BATCH_SIZE"] = str(batch)
                started = time.monotonic()
                done = subprocess.run([sys.executable, "-m", "kernelpro.cli", "optimize", str(folder / "reference.py"),
                                       "--device", device, "--max-iters", str(max_iters), "--policy", policy,
                                       "--runs-dir", str(out / "runs" / case / policy), "--json", *extra],
                                      env=env, cwd=ROOT, capture_output=True, text=True, timeout=3000)
                lines = done.stdout.strip().splitlines()
                # "no improvement: keep the reference" is a completed run too, with its own exit code
                completed = done.returncode in (exit_codes.OK, exit_codes.NO_IMPROVEMENT)
                summary = json.loads(lines[-1]) if completed and lines else {}
                entry = {"case": case, "policy": policy, "returncode": done.returncode,
                         "wall_s": round(time.monotonic() - started, 1), "summary": summary,
                         "distinct_candidates": len(set(candidates)),
                         "model_requests": len(server.requests), "stderr_tail": done.stderr[-4000:]}
                report["runs"].append(entry)
                print(json.dumps({k: entry[k] for k in ("case", "policy", "returncode", "wall_s")}
                                 | {"best": summary.get("best_speedup"), "judged": summary.get("candidates_judged")}),
                      flush=True)
                # after every run, so a call cut short keeps the runs it finished
                name = "search_policies_h200" + ("" if list(cases) == list(CASES) else "_" + "_".join(cases))
                (out / f"{name}.json").write_text(json.dumps(report, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare")
    prep.add_argument("--cases-dir", type=Path, default=ROOT / "benchmarks" / "inputs" / "real_candidates")
    go = sub.add_parser("run")
    go.add_argument("--out", type=Path, required=True)
    go.add_argument("--max-iters", type=int, default=6)
    go.add_argument("--batch", type=int, default=3)
    go.add_argument("--cases", nargs="+", default=list(CASES))
    go.add_argument("--policies", nargs="+", default=list(POLICIES))
    go.add_argument("--device", default="cuda", help="cpu for a smoke test of the script itself")
    go.add_argument("--no-profile", action="store_true", help="pass --no-profile to every run (faster)")
    go.add_argument("--no-memory", action="store_true",
                    help="pass --no-memory to every run (a machine without the memory's embedding model)")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.cases_dir)
    else:
        extra = (["--no-profile"] if args.no_profile else []) + (["--no-memory"] if args.no_memory else [])
        run(args.out, args.max_iters, args.batch, args.cases, args.policies, extra, args.device)


if __name__ == "__main__":
    main()
