"""`kernelpro suite run` with the built-in recipes over KernelBench level-1 and level-2 problems on a GPU host.

    python benchmarks/suite_kernelbench.py --extract /work/.mirror/ScalingIntelligence+KernelBench/repo
        [--release COMMIT --inputs DIR]
    python benchmarks/suite_kernelbench.py --out OUT [--inputs DIR | --problems LIST] [--levels 1,2] [--tasks 1-20]
        [--max-iters 1] [--time-budget 9m]
        [--baselines eager,compile_default,compile_max_autotune_no_cudagraphs] [--timing-budget-s 3] [--profile]
        [--lanes-per-gpu 1] [--share-until-timing]
    python benchmarks/suite_kernelbench.py --out OUT --resume [--retry crash,lost] [--time-budget 15m]
    python benchmarks/suite_kernelbench.py --out OUT --tabulate

The first form (on a machine with the KernelBench mirror, a bare git directory) extracts levels 1 and 2 into
``benchmarks/inputs/kernelbench/KernelBench/`` (gitignored: the project never ships KernelBench's problems);
``--release b08d959^ --inputs benchmarks/inputs/kernelbench_first`` takes the first release instead, whose smaller
sizes (the ones most published results and CUDA-L1's kernels used) make eager host-bound on 63 of its 100 level-2
and 50 of its 100 level-1 problems on an H200 (``host_bound_screen.py``).
The second runs one suite over those levels' ``--tasks`` (KernelBench's own task ids: 1-20 gives 20 level-1 and
20 level-2 problems), or over the problems a list file names (``--problems``: ``host_bound_screen.py``'s
``host_bound.txt``, say), one problem per visible GPU at once, with no language model and no search memory, and
writes under OUT: ``suite_kernelbench.json`` (the command, the suite's JSON object: fast_p against eager and
against the fastest compile baseline, geomean, per level, GPU and wall time; and ``gpu_phases``, the verdicts'
seconds by the judge's phases), ``baselines.json`` (each problem's baselines with their intervals, host-bound
flags and seconds, and what each mode cost in all; ``--tabulate`` writes it alone), ``suite_kernelbench.log`` (the
progress), and ``suite/``: the suite directory (``suite.md``, ``suite.html``, plots, the ledger, every
problem's run with its report). The suite stops starting problems when ``--time-budget`` is spent, so the
script ends inside a fixed device-time slot (problems not started are listed as such). Measured on one H200
with ``--lanes-per-gpu 4``: 0.9-1.6 wall-minutes a problem (two child processes, the compile baseline, one
recipe, the finalists' re-judgment), 20 level-1 problems in 6.9 minutes, before the recipes that are a
baseline's code were answered from its verdict. A suite longer than one slot: give the
whole ``--time-budget`` at the start (the suite counts only its active time), let the slot's end kill it, and
run ``--resume`` with the same OUT in the next slot; the suite starts the interrupted problems again from their
checkpoints.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
INPUTS = HERE / "inputs" / "kernelbench"
sys.path.insert(0, str(HERE.parent))

from kernelpro.suite.device_time import baseline_entries, baseline_files, device_time, judged_verdicts  # noqa: E402


def extract(mirror: Path, inputs: Path = INPUTS, release: str = "HEAD") -> None:
    """levels 1 and 2 of a KernelBench bare git directory, at ``release`` (a commit), into ``inputs``."""
    inputs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "kb.tar"
        subprocess.run(["git", f"--git-dir={mirror}", "archive", "-o", str(archive), release,
                        "KernelBench/level1", "KernelBench/level2"], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(inputs, filter="data")
    count = len(list(inputs.glob("KernelBench/level*/*.py")))
    print(f"{count} problems of release {release} under {inputs}")


def _suites(suite_dir: Path) -> list[tuple[Path, list[tuple[str, str]]]]:
    """Each suite directory under ``suite_dir`` with its problems' (key, run id) pairs."""
    found = []
    for ledger in sorted(suite_dir.glob("suite-*/ledger.sqlite")):
        with contextlib.closing(sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)) as db:
            runs = db.execute("SELECT key, run_id FROM problems WHERE run_id IS NOT NULL").fetchall()
        found.append((ledger.parent, runs))
    return found


def where_gpu_time_went(suite_dir: Path) -> dict:
    """Every verdict the suites under ``suite_dir`` took, each once, by phase and by how jobs held the device
    (``kernelpro.suite.device_time``, the suite report's own figures)."""
    return device_time([v for root, runs in _suites(suite_dir) for v in judged_verdicts(root, runs)])


def baseline_verdict_files(suite_dir: Path) -> list[tuple[str, Path]]:
    """(problem, file) for each problem's compile baselines' verdicts, over the suites under ``suite_dir``."""
    return sorted(item for root, runs in _suites(suite_dir) for item in baseline_files(root, runs))


def baseline_table(suite_dir: Path) -> dict:
    """Each problem's baselines as its suite measured them (the eager reference's time; each compile mode's
    speedup with its 95% interval, whether the eager time is host-bound, the verdict's seconds in the worker and
    its first call's), with their totals by mode: what the baselines alone cost a suite of this size."""
    def level_task(item: tuple[str, Path]) -> tuple[str, int]:
        level, _, rest = item[0].partition("_")
        return level, int(rest.split("_", 1)[0]) if rest[:1].isdigit() else 0

    rows, totals = [], {}
    for problem, path in sorted(baseline_verdict_files(suite_dir), key=level_task):
        row: dict = {"problem": problem}
        for entry in baseline_entries(path):
            mode = entry["mode"]
            verdict = entry["result"]
            details = verdict.get("details") or {}
            seconds = verdict.get("elapsed_s") or 0.0
            first_call = (details.get("phase_s") or {}).get("correctness", 0.0)
            row["reference_ms"] = row.get("reference_ms") or verdict.get("reference_ms")
            row[mode] = {"status": verdict["status"], "speedup": verdict.get("speedup"),
                         "ci95": verdict.get("speedup_ci95"), "host_bound": verdict.get("host_bound"),
                         "seconds": round(seconds, 1), "first_call_s": round(first_call, 1)}
            total = totals.setdefault(mode, {"verdicts": 0, "seconds": 0.0, "first_call_s": 0.0})
            total["verdicts"] += 1
            total["seconds"] = round(total["seconds"] + seconds, 1)
            total["first_call_s"] = round(total["first_call_s"] + first_call, 1)
        rows.append(row)
    host_bound = sum(any((v or {}).get("host_bound") for k, v in r.items() if isinstance(v, dict)) for r in rows)
    return {"problems": len(rows), "host_bound": host_bound, "totals": totals, "rows": rows}


def earlier_sessions(path: Path) -> list[dict]:
    """The records of the sessions before this one (a suite resumed across device slots), oldest first."""
    if not path.is_file():
        return []
    old = json.loads(path.read_text())
    return [*old.pop("earlier", []), old]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--extract", type=Path, help="A KernelBench bare git directory to extract levels 1-2 from.")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "suite-kernelbench")))
    parser.add_argument("--inputs", type=Path, default=INPUTS)
    parser.add_argument("--release", default="HEAD",
                        help="With --extract: the KernelBench commit to extract (HEAD: today's sizes; "
                             "b08d959^: the first release's smaller sizes, which most published results used).")
    parser.add_argument("--levels", default="1,2", help="KernelBench levels (comma-separated).")
    parser.add_argument("--tasks", default=None, help="KernelBench task ids per level (1-20 without --problems).")
    parser.add_argument("--problems", type=Path, default=None,
                        help="A file listing problem paths (host_bound_screen.py's host_bound.txt): the suite's "
                             "source instead of --inputs' levels, filtered by --levels and --tasks only if given.")
    parser.add_argument("--max-iters", type=int, default=1, help="Recipes judged per problem.")
    parser.add_argument("--time-budget", default=None,
                        help="The suite's wall time (9m when it starts); no problem starts after it. Given with "
                             "--resume, it replaces the suite's total (the time already active counts).")
    # the recipes torch.compile and max-autotune-no-cudagraphs are the compile baselines' very code: a run answers
    # them from the baselines' verdicts, so the three baselines cost what the first recipes cost
    parser.add_argument("--baselines", default="eager,compile_default,compile_max_autotune_no_cudagraphs",
                        help="eager, compile_default, compile_max_autotune_no_cudagraphs (comma-separated).")
    parser.add_argument("--timing-budget-s", type=float, default=3.0,
                        help="harness.timing_budget_s: each verdict's timing cap (the finalists' is 3x).")
    parser.add_argument("--profile", action="store_true", help="Profile candidates with ncu (slower).")
    parser.add_argument("--lanes-per-gpu", type=int, default=1,
                        help="suite.lanes_per_gpu: problems at once per GPU, their measurements taking turns.")
    parser.add_argument("--compile-threads", type=int, default=None,
                        help="TORCHINDUCTOR_COMPILE_THREADS for the judge's workers (their default: 1): max-autotune "
                             "compiles its choices on that many threads (benchmarks/compile_threads.py: on the H200, "
                             "16 threads took max-autotune's first call 54 s, as 1 did).")
    parser.add_argument("--share-until-timing", action="store_true",
                        help="harness.share_until_timing: each job holds the device lock shared while it loads "
                             "and checks, lets it go while it compiles, and holds it alone only to time and for "
                             "autotuning's benchmarks, so lanes overlap all but their measurements "
                             "(benchmarks/shared_until_timing.py, "
                             "benchmarks/release_while_compiling.py).")
    parser.add_argument("--tabulate", action="store_true",
                        help="Only (re)write OUT/baselines.json and OUT/gpu_phases.json from the suite already "
                             "under OUT.")
    parser.add_argument("--resume", action="store_true",
                        help="Finish the suite already under OUT (after a kill); its own budgets and settings hold.")
    parser.add_argument("--retry", default=None,
                        help="With --resume: start these failed problems again (crash, hang, lost, setup, problem, "
                             "gpu_memory, comma-separated, or all), e.g. after a fault of the host, not of the "
                             "problem.")
    args = parser.parse_args()
    if args.retry and not args.resume:
        parser.error("--retry goes with --resume")
    if args.extract:
        extract(args.extract, args.inputs, args.release)
        return
    if args.tabulate:
        (args.out / "baselines.json").write_text(json.dumps(baseline_table(args.out / "suite"), indent=1))
        (args.out / "gpu_phases.json").write_text(json.dumps(where_gpu_time_went(args.out / "suite"), indent=1))
        return
    if args.problems is None and not list(args.inputs.glob("KernelBench/level*/*.py")):
        sys.exit(f"no KernelBench problems under {args.inputs}; run with --extract MIRROR first, and carry it")
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {"KERNELPRO_SUITE__BASELINES": json.dumps(args.baselines.split(",")),
                "KERNELPRO_SUITE__REPORT_INTERVAL_S": "120",
                "KERNELPRO_HARNESS__TIMING_BUDGET_S": str(args.timing_budget_s),
                "KERNELPRO_SUITE__LANES_PER_GPU": str(args.lanes_per_gpu)}
    if args.share_until_timing:
        settings["KERNELPRO_HARNESS__SHARE_UNTIL_TIMING"] = "true"
    if args.resume:
        settings = {}  # the suite restores the settings it started with (its config's ``environment``)
    if args.compile_threads:  # not a kernelpro setting, so not one the suite restores: given on --resume too
        settings["TORCHINDUCTOR_COMPILE_THREADS"] = str(args.compile_threads)
    env = {**os.environ, **settings}
    if args.resume:
        suites = sorted((args.out / "suite").glob("suite-*"))
        if len(suites) != 1:
            sys.exit(f"--resume needs exactly one suite under {args.out / 'suite'}; found {len(suites)}")
        command = [sys.executable, "-m", "kernelpro.cli", "suite", "run", "--resume", suites[0].name,
                   "--runs-dir", str(args.out / "suite"), "--json"]
        command += (["--retry", args.retry] if args.retry else []) + (
            ["--time-budget", args.time_budget] if args.time_budget else [])
    else:
        if args.problems is None:
            source, tasks = args.inputs, args.tasks or "1-20"
        else:
            source, tasks = args.problems, args.tasks
        levels = [flag for level in args.levels.split(",") for flag in ("--level", level.strip())]
        command = [sys.executable, "-m", "kernelpro.cli", "suite", "run", str(source), *levels,
                   *(["--tasks", tasks] if tasks else []), "--device", "cuda", "--policy", "recipes", "--max-iters",
                   str(args.max_iters), "--time-budget", args.time_budget or "9m", "--runs-dir",
                   str(args.out / "suite"), "--no-memory", "--json"] + ([] if args.profile else ["--no-profile"])
    start = time.monotonic()
    with (args.out / "suite_kernelbench.log").open("a" if args.resume else "w") as log:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    wall = time.monotonic() - start
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    record = {"command": " ".join(command[1:]), "settings": settings, "exit_code": done.returncode,
              "wall_seconds": round(wall, 1), "suite": result, "gpu_phases": where_gpu_time_went(args.out / "suite")}
    if args.resume:
        record["earlier"] = earlier_sessions(args.out / "suite_kernelbench.json")
    (args.out / "suite_kernelbench.json").write_text(json.dumps(record, indent=1))
    (args.out / "baselines.json").write_text(json.dumps(baseline_table(args.out / "suite"), indent=1))
    if result is None:
        sys.exit(f"the suite failed (exit {done.returncode}); see {args.out / 'suite_kernelbench.log'}")
    print(f"{result['problems']} problems, {result['finished']} finished, {result['improved']} improved; fast_p "
          f"{result['fast_p']}, geomean {result['geomean_speedup']}; GPU {result['gpu_seconds'] / 60:.1f} min, "
          f"wall {wall / 60:.1f} min; {result['report_md']}")


if __name__ == "__main__":
    main()
