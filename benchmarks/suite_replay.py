"""`kernelpro suite run` with a model, over real KernelBench problems, the model replayed: every agent is played
by the loopback OpenAI-compatible test server, and the coder's candidates are the real LLM-written kernels
CUDA-L1 released for each task (its first and its current version, in turn; see ``replayed_agents.py``).

    python benchmarks/suite_replay.py prepare [--cases-dir benchmarks/inputs/real_candidates]
    python benchmarks/suite_replay.py run --out OUT [--levels 1 2] [--max-iters 2] [--time-budget 9m]
        [--problems L1_T001 ...] [--device cpu]  (cpu: a smoke test of the script; the kernels need CUDA)
        [--no-memory] [--lanes-per-gpu N] [--share-until-timing]
    python benchmarks/suite_replay.py run --out OUT --resume [--time-budget 9m] [--levels ...] [--problems ...]

``prepare`` (here, from the cases ``judge_real_candidates.py prepare`` made) writes, gitignored,
``benchmarks/inputs/suite_replay/problems/L1_T001.py`` (the KernelBench reference, named after its level and
task) and ``.../candidates/L1_T001/{first,current}.py``. ``run`` (on the GPU host) starts the server, then one
suite over the problems of ``--levels`` with the search's default policy, the planner, coder, profiler-interpreter
and critic all asking the server; it writes under OUT ``suite_replay.json`` (the command, the suite's JSON
object, wall time, the model requests by role, requests whose problem had no replayed candidate) and
``suite_replay.log``, plus the suite directory ``suite/`` (reports, ledger, every run). This shows the suite and
the whole agent graph at work on a GPU with real kernels; two candidates per task are not evidence of what a
model would find. ``--resume`` (after the slot's end killed it) starts the server again, serving the same
problems' candidates, and finishes the suite under OUT (``kernelpro suite run --resume``); give the same
``--levels``/``--problems``, since the server serves only those.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.replayed_agents import loopback_environment, problem_of, replay, role_of  # noqa: E402
from benchmarks.suite_kernelbench import earlier_sessions  # noqa: E402
from tests.support.openai_server import OpenAIServer  # noqa: E402

INPUTS = ROOT / "benchmarks" / "inputs" / "suite_replay"
VERSIONS = ("first", "current")


def prepare(cases_dir: Path) -> None:
    """One problem file per task that has a first and a current CUDA-L1 candidate."""
    tasks = sorted({p.name.split("_", 1)[1] for p in cases_dir.glob("*_L*_T*") if p.is_dir()})
    made = 0
    for task in tasks:
        folders = {v: cases_dir / f"{v}_{task}" for v in VERSIONS}
        if not all((f / "candidate.py").is_file() for f in folders.values()):
            continue
        (INPUTS / "problems").mkdir(parents=True, exist_ok=True)
        (INPUTS / "problems" / f"{task}.py").write_text((folders["current"] / "reference.py").read_text())
        target = INPUTS / "candidates" / task
        target.mkdir(parents=True, exist_ok=True)
        for version, folder in folders.items():
            (target / f"{version}.py").write_text((folder / "candidate.py").read_text())
        made += 1
    print(f"{made} problems with replayed candidates under {INPUTS}")


class Replayer:
    """The coder's answers, per problem: its candidates in turn; counts what it served."""

    def __init__(self, candidates: dict[str, list[str]], fallback: str) -> None:
        self.candidates, self.fallback = candidates, fallback
        self.served: collections.Counter[str] = collections.Counter()
        self.unknown: collections.Counter[str] = collections.Counter()

    def pick(self, body: dict) -> str:
        name = problem_of(body) or "?"
        mine = self.candidates.get(name)
        if not mine:  # a problem without replayed code: the coder answers with a candidate that fails to load
            self.unknown[name] += 1
            return self.fallback
        source = mine[self.served[name] % len(mine)]
        self.served[name] += 1
        return source


def suite_command(out: Path, source: Path, device: str, max_iters: int, time_budget: str | None, profile: bool,
                  memory: bool, resume: bool, retry: str | None = None) -> list[str]:
    """A new suite over ``source``, or (``resume``) the one suite already under ``out``."""
    head = [sys.executable, "-m", "kernelpro.cli", "suite", "run"]
    if resume:
        suites = sorted((out / "suite").glob("suite-*"))
        if len(suites) != 1:
            sys.exit(f"--resume needs exactly one suite under {out / 'suite'}; found {len(suites)}")
        budget = ["--time-budget", time_budget] if time_budget else []
        again = ["--retry", retry] if retry else []
        return head + ["--resume", suites[0].name, "--runs-dir", str(out / "suite"), "--json"] + budget + again
    return head + [str(source), "--device", device, "--max-iters", str(max_iters), "--time-budget",
                   time_budget or "9m", "--runs-dir", str(out / "suite"), "--json"] + (
        [] if profile else ["--no-profile"]) + ([] if memory else ["--no-memory"])


def restore_sources(out: Path) -> None:
    """Write back the problem files the suite under ``out`` names where they are gone (a suite started in a
    temporary directory on a machine since given back), from the same inputs."""
    for ledger in (out / "suite").glob("suite-*/ledger.sqlite"):
        with sqlite3.connect(ledger) as db:
            for (name,) in db.execute("SELECT path FROM problems"):
                path, source = Path(name), INPUTS / "problems" / Path(name).name
                if not path.exists() and source.is_file():
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(source.read_text())


def run(out: Path, levels: list[int], max_iters: int, time_budget: str | None, device: str, profile: bool,
        only: list[str] | None = None, memory: bool = True, lanes_per_gpu: int = 1, share_until_timing: bool = False,
        resume: bool = False, retry: str | None = None) -> None:
    problems = sorted(p for p in (INPUTS / "problems").glob("L*_T*.py")
                      if int(p.stem[1]) in levels and (not only or p.stem in only))
    if not problems:
        sys.exit(f"no problems under {INPUTS / 'problems'}; run `prepare` first, and carry {INPUTS}")
    chosen = out / "problems"  # the levels asked for, as one source directory; the suite's ledger names its files
    chosen.mkdir(parents=True, exist_ok=True)
    if not resume:  # an earlier suite's problems left in OUT would join this one's source
        for stale in chosen.glob("*.py"):
            stale.unlink()
    for path in problems:
        (chosen / path.name).write_text(path.read_text())
    if resume:
        restore_sources(out)
    candidates = {p.stem: [(INPUTS / "candidates" / p.stem / f"{v}.py").read_text() for v in VERSIONS]
                  for p in problems}
    replayer = Replayer(candidates, "raise RuntimeError('no replayed candidate for this problem')\n")
    out.mkdir(parents=True, exist_ok=True)
    with OpenAIServer() as server, tempfile.TemporaryDirectory() as scratch:
        replay(server, replayer.pick)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
        env.update(loopback_environment(server, str(Path(scratch) / "memory")))
        if not resume:  # a resumed suite restores the rest of its settings; the server's address is new
            env.update({"KERNELPRO_SUITE__BASELINES": json.dumps(["eager", "compile_default"]),
                        "KERNELPRO_SUITE__REPORT_INTERVAL_S": "120",
                        "KERNELPRO_SUITE__LANES_PER_GPU": str(lanes_per_gpu)})
            if share_until_timing:
                env["KERNELPRO_HARNESS__SHARE_UNTIL_TIMING"] = "true"
        command = suite_command(out, chosen, device, max_iters, time_budget, profile, memory, resume, retry)
        started = time.monotonic()
        with (out / "suite_replay.log").open("a" if resume else "w") as log:
            done = subprocess.run(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True)
        wall = time.monotonic() - started
        roles = dict(collections.Counter(role_of(request.body) for request in server.requests))
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    record = {"command": " ".join(command[1:]), "problems": [p.stem for p in problems], "exit_code": done.returncode,
              "wall_seconds": round(wall, 1), "model_requests": roles,
              "candidates_served": dict(replayer.served), "problems_without_candidates": dict(replayer.unknown),
              "suite": result}
    if resume:
        record["earlier"] = earlier_sessions(out / "suite_replay.json")
    (out / "suite_replay.json").write_text(json.dumps(record, indent=1) + "\n")
    if result is None:
        sys.exit(f"the suite failed (exit {done.returncode}); see {out / 'suite_replay.log'}")
    print(f"{result['problems']} problems, {result['improved']} improved; fast_p {result['fast_p']}, geomean "
          f"{result['geomean_speedup']}; GPU {result['gpu_seconds'] / 60:.1f} min, wall {wall / 60:.1f} min; "
          f"model requests {roles}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare")
    prep.add_argument("--cases-dir", type=Path, default=ROOT / "benchmarks" / "inputs" / "real_candidates")
    go = sub.add_parser("run")
    go.add_argument("--out", type=Path, required=True)
    go.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    go.add_argument("--max-iters", type=int, default=2, help="Candidates judged per problem.")
    go.add_argument("--time-budget", default=None,
                    help="The suite's wall time (9m when it starts); no problem starts after it. With --resume, it "
                         "replaces the suite's total.")
    go.add_argument("--device", default="cuda", help="cpu for a smoke test of the script itself")
    go.add_argument("--profile", action="store_true", help="Profile candidates with ncu (slower).")
    go.add_argument("--problems", nargs="+", help="Only these problems (e.g. L1_T001 L2_T033).")
    go.add_argument("--no-memory", action="store_true",
                    help="Without the search memory (on a machine its embedding model cannot travel to).")
    go.add_argument("--lanes-per-gpu", type=int, default=1, help="suite.lanes_per_gpu")
    go.add_argument("--share-until-timing", action="store_true",
                    help="harness.share_until_timing: jobs hold the device alone only to time, so lanes (and a suite "
                         "beside this one) overlap all but their measurements")
    go.add_argument("--resume", action="store_true", help="Finish the suite already under OUT (after a kill).")
    go.add_argument("--retry", help="With --resume: start these failed problems again (crash,lost,problem or all).")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.cases_dir)
    else:
        run(args.out, args.levels, args.max_iters, args.time_budget, args.device, args.profile, args.problems,
            memory=not args.no_memory, lanes_per_gpu=args.lanes_per_gpu,
            share_until_timing=args.share_until_timing, resume=args.resume, retry=args.retry)


if __name__ == "__main__":
    main()
