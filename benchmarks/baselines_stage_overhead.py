"""What a separate process for a problem's compile baselines cost a suite, beyond the baselines' own judging.

    python benchmarks/baselines_stage_overhead.py \
        benchmarks/results/suite_kernelbench_h200_recipes_40/suite_dir.tar.xz \
        --out benchmarks/results/baselines_stage_overhead_h200.json

Suites before runs judged their baselines themselves started ``kernelpro suite baselines`` for each problem, then
``kernelpro optimize``. Per problem, from such a suite's logs: the stage's wall time (its start, written at the
head of ``<problem>.baselines.log``, to the last write of ``<problem>.baselines.out``), the seconds its verdicts
spent in the worker, and the difference: the process's start (Python, torch, the CLI), its worker's start (the
CUDA context, the warm-up), its exit, and, in a suite whose lanes took turns on the device, its waits for it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tarfile
import tempfile
import time
from calendar import timegm
from pathlib import Path


def overheads(logs: Path) -> list[dict]:
    rows = []
    for log in sorted(logs.glob("*.baselines.log")):
        problem = log.name.removesuffix(".baselines.log")
        heads = [line for line in log.read_text().splitlines() if line.startswith("--- ")]
        out, summary = logs / f"{problem}.baselines.out", logs / f"{problem}.baselines.json"
        if not heads or not out.exists() or not summary.exists():
            continue
        started = timegm(time.strptime(heads[-1].split()[1], "%Y-%m-%dT%H:%M:%SZ"))  # the last attempt's
        wall = out.stat().st_mtime - started
        judged = sum(v.get("elapsed_s") or 0.0 for v in json.loads(summary.read_text()).values())
        if 0 < wall < 3600:
            rows.append({"problem": problem, "wall_s": round(wall, 1), "judged_s": round(judged, 1),
                         "overhead_s": round(wall - judged, 1)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("archive", type=Path, help="A suite directory's .tar.xz (as benchmarks/results keep them).")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(args.archive) as archive:
            archive.extractall(tmp, filter="data")  # keeps the files' times
        logs = sorted(Path(tmp).glob("**/suite-*/logs"))
        if not logs:
            sys.exit(f"{args.archive}: no suite logs inside")
        rows = overheads(logs[0])
    if not rows:
        sys.exit(f"{args.archive}: no baselines stage in its logs")
    spent = sorted(r["overhead_s"] for r in rows)
    report = {"command": " ".join(sys.argv), "problems": len(rows),
              "overhead_s": {"min": spent[0], "median": statistics.median(spent),
                             "mean": round(statistics.mean(spent), 1), "max": spent[-1], "lowest_five": spent[:5]},
              "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["overhead_s"]))


if __name__ == "__main__":
    main()
