"""load_inline candidates judged in one batch: extensions built ahead in the CPU pool against the serial path.

    # inputs (once, here): benchmarks/load_inline_inputs.py writes benchmarks/inputs/load_inline/
    PYTHONPATH=. python benchmarks/load_inline_ahead.py benchmarks/inputs/load_inline --device cuda \\
        --count 24 --modes ahead,cached --out $OUT/load_inline_ahead_h200.json
    PYTHONPATH=. python benchmarks/load_inline_ahead.py benchmarks/inputs/load_inline --device cuda \\
        --count 5 --modes serial,ahead --out $OUT/load_inline_serial_h200.json

Modes, each one batch through a new ``Pipeline``, in the order given:

- ``ahead``: ``compile.inline_ahead`` on, an empty extension cache: every build in the pool
  (``compile.inline_workers`` wide) while the GPU judges the candidates whose builds are done;
- ``cached``: the same batch again on the now-filled cache: it must build nothing;
- ``serial``: ``inline_ahead`` and ``inline_cache`` off: each candidate builds in the worker as it is imported,
  one after another (the path before ahead-building), with an empty torch extensions directory.

Per mode: wall time (the batch's ``judge`` call; the worker's start included), GPU-busy time (the sum of the
verdicts' phases in the worker except ``load_candidate``, where builds happen: the lane holds the GPU for the
rest; a verdict without phases, such as a timeout, held the lane for its whole elapsed time) and GPU-idle
time (wall minus busy), the pool's width and its builds (made, from the cache, failed; their compilers' CPU
seconds), every candidate's verdict and how each extension was satisfied. For ``ahead``
the target: wall <= 1.5 x (build CPU seconds / pool width) + GPU-busy time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.pipeline import Pipeline  # noqa: E402
from kernelpro.problem import parse_problem  # noqa: E402

MODES = ("ahead", "cached", "serial")


def load_cases(directory: Path, count: int) -> list[tuple[Path, Any, str]]:
    cases = []
    for case in sorted(p for p in directory.iterdir() if (p / "candidate.py").is_file())[:count]:
        problem = parse_problem((case / "reference.py").read_text(encoding="utf-8"), name=case.name)
        cases.append((case, problem, (case / "candidate.py").read_text(encoding="utf-8")))
    return cases


def settings_for(mode: str, scratch: Path, args: argparse.Namespace) -> Settings:
    s = Settings()
    s.harness.timing_budget_s = args.timing_budget_s
    s.harness.min_timing_trials = 10
    if args.timeout_s:  # otherwise the judge's own limits, as in a real run: a candidate that hangs or crawls on
        # its problem ends after the floor fitted to the reference, not after minutes that hold the whole batch
        s.harness.timeout_s = args.timeout_s
        s.harness.timeout_floor_s = args.timeout_s
    s.compile.inline_workers = args.width
    s.compile.inline_cache_dir = scratch / "inline-cache"  # empty at the first mode that fills it
    # a torch extensions directory (compile.cache_dir/torch_extensions) no earlier run has built into
    s.compile.cache_dir = scratch / f"compile-cache-{mode}"
    s.compile.inline_ahead = mode != "serial"
    s.compile.inline_cache = mode != "serial"
    return s


def judge_mode(mode: str, cases: list[tuple[Path, Any, str]], scratch: Path, args: argparse.Namespace
               ) -> dict[str, Any]:
    settings = settings_for(mode, scratch, args)
    items = [(problem, source) for _, problem, source in cases]
    started = time.monotonic()

    def progress(index: int, result: Any) -> None:
        """One line a verdict, as it comes: a run cut by a time limit still says how far it got and why."""
        print(f"{mode} {time.monotonic() - started:7.1f} s  {cases[index][0].name}: {result.status}/{result.reason}"
              f" in {result.elapsed_s:.1f} s (load {result.details.get('phase_s', {}).get('load_candidate', 0):.1f}"
              f" s) {result.message[:160]!r}", file=sys.stderr, flush=True)

    with Pipeline(args.device, settings) as pipeline:
        results = pipeline.judge(items, on_verdict=progress)
        wall = time.monotonic() - started
        stats = pipeline.stats
    rows, busy = [], 0.0
    for (case, _, _), result in zip(cases, results, strict=True):
        phases = result.details.get("phase_s", {})
        # a verdict the worker could not finish (a timeout, a crash) has no phases: its lane was held throughout
        lane_s = sum(v for k, v in phases.items() if k not in ("load_candidate", "start")) if phases \
            else (result.elapsed_s or 0.0)
        busy += lane_s
        rows.append({"case": case.name, "status": result.status, "reason": result.reason,
                     "message": result.message[:400], "speedup": result.speedup, "elapsed_s": result.elapsed_s,
                     "load_candidate_s": phases.get("load_candidate"), "gpu_busy_s": round(lane_s, 3),
                     "phase_s": phases,
                     "load_inline": result.details.get("load_inline", [])})
    paths = Counter(r["path"] for row in rows for r in row["load_inline"])
    out: dict[str, Any] = {
        "mode": mode, "candidates": len(cases), "wall_s": round(wall, 2), "gpu_busy_s": round(busy, 2),
        "gpu_idle_s": round(wall - busy, 2), "pool_width": stats.inline_pool_width,
        "builds": {"built": stats.inline.built, "from_cache": stats.inline.cached, "failed": stats.inline.failed,
                   "build_cpu_s": round(stats.inline.cpu_s, 1), "build_wall_s_sum": round(stats.inline.build_s, 1)},
        "extension_paths": dict(paths), "verdicts": dict(Counter(f"{r['status']}/{r['reason']}" for r in rows)),
        "worker_starts": stats.worker_starts, "rows": rows}
    if mode == "ahead" and stats.inline_pool_width:
        target = 1.5 * stats.inline.cpu_s / stats.inline_pool_width + busy
        out["target_s"] = round(target, 2)
        out["meets_target"] = wall <= target
    if mode == "cached":
        out["built_nothing"] = stats.inline.built == 0 and not (paths.keys() - {"cache_hit"})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--count", type=int, default=24, help="the first N cases (sorted by name)")
    parser.add_argument("--modes", default="ahead,cached", help=f"comma-separated, in order, from {MODES}")
    parser.add_argument("--width", type=int, default=0, help="compile.inline_workers (0: one per core)")
    parser.add_argument("--timing-budget-s", type=float, default=2.0)
    parser.add_argument("--timeout-s", type=float, default=None,
                        help="harness.timeout_s and timeout_floor_s for every job (default: the judge's own)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    modes = args.modes.split(",")
    if bad := set(modes) - set(MODES):
        parser.error(f"unknown modes {sorted(bad)}")
    cases = load_cases(args.cases, args.count)
    scratch = Path(tempfile.mkdtemp(prefix="kernelpro-load-inline-bench-"))
    report: dict[str, Any] = {"command": " ".join(sys.argv), "host": platform.node(), "cpus": os.cpu_count(),
                              "cases": [c.name for c, _, _ in cases], "runs": []}
    try:
        import torch

        report["torch"] = torch.__version__
        report["gpu"] = torch.cuda.get_device_name() if torch.cuda.is_available() else None
        for mode in modes:
            run = judge_mode(mode, cases, scratch, args)
            report["runs"].append(run)
            print(f"{mode}: wall {run['wall_s']} s, GPU idle {run['gpu_idle_s']} s, builds {run['builds']}, "
                  f"paths {run['extension_paths']}, verdicts {run['verdicts']}"
                  + (f", target {run['target_s']} s met: {run['meets_target']}" if "target_s" in run else ""),
                  flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=1))  # after every mode: a later one may run out of time
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
