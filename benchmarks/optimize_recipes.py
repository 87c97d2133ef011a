"""Run `kernelpro optimize` with the built-in recipes (no language model) on several problems; collect results.

    python benchmarks/optimize_recipes.py OUT_DIR [--max-iters 4] [--budget-s 500] [--profile] [PROBLEM ...]

Default problems: benchmarks/problems/optimize/*.py. Each run goes through the whole graph (baseline, select,
plan, code, judge, profile when --profile, critique, remember) on CUDA. Writes OUT_DIR/optimize_recipes.json
(one entry per problem: the command, its final JSON line, wall time, the results log) and copies each run's
report and best candidate to OUT_DIR/<problem>/. Problems that would start past --budget-s are skipped and
recorded as such, so the script ends inside a fixed device-time slot.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("problems", nargs="*", type=Path)
    parser.add_argument("--max-iters", type=int, default=4)
    parser.add_argument("--budget-s", type=float, default=500.0)
    parser.add_argument("--profile", action="store_true", help="Profile each correct candidate with ncu.")
    parser.add_argument("--memory", action="store_true", help="Use the search memory (needs chromadb).")
    args = parser.parse_args()
    problems = args.problems or sorted((HERE / "problems" / "optimize").glob("*.py"))
    args.out.mkdir(parents=True, exist_ok=True)
    runs = args.out / "runs"
    start = time.monotonic()
    entries = []
    for problem in problems:
        left = args.budget_s - (time.monotonic() - start)
        command = [sys.executable, "-m", "kernelpro.cli", "optimize", str(problem), "--device", "cuda",
                   "--max-iters", str(args.max_iters), "--runs-dir", str(runs), "--json",
                   "--time-budget", f"{max(int(left) - 30, 1)}s"]
        command += [] if args.profile else ["--no-profile"]
        command += [] if args.memory else ["--no-memory"]
        entry = {"problem": problem.stem, "command": " ".join(command[1:])}
        if left < 60:
            entries.append(entry | {"skipped": f"device-time budget spent ({left:.0f} s left)"})
            continue
        t0 = time.monotonic()
        proc = subprocess.run(command, capture_output=True, text=True, timeout=max(left, 60))
        entry |= {"returncode": proc.returncode, "wall_s": round(time.monotonic() - t0, 1),
                  "stderr_tail": proc.stderr[-4000:]}
        try:
            final = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            final = None
        entry["final"] = final
        if final:
            run_dir = Path(final["run_dir"])
            entry["results"] = [json.loads(line) for line in Path(final["results"]).read_text().splitlines()]
            keep = args.out / problem.stem
            keep.mkdir(exist_ok=True)
            for name in ("report.md", "report.html", "speedup.png", "best_candidate.py",
                         "best_candidate_standalone.py", "results.jsonl"):
                if (run_dir / name).exists():
                    shutil.copy(run_dir / name, keep / name)
        entries.append(entry)
        print(f"{problem.stem}: rc={proc.returncode} {entry['wall_s']} s best="
              f"{final and final.get('best_speedup')} judged={final and final.get('candidates_judged')}",
              flush=True)
        (args.out / "optimize_recipes.json").write_text(json.dumps(entries, indent=1, default=str))
    (args.out / "optimize_recipes.json").write_text(json.dumps(entries, indent=1, default=str))


if __name__ == "__main__":
    main()
