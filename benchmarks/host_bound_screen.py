"""Which problems' eager time is the host's launch cost: a quick screen before a suite aimed at them.

    python benchmarks/host_bound_screen.py --inputs benchmarks/inputs/kernelbench_first [--levels 1,2]
        [--tasks 1-100] [--timing-budget-s 0.5] --out OUT

Each KernelBench-format problem under ``INPUTS/KernelBench/level<N>/`` is built once (``get_init_inputs()``,
seeded, on the GPU) and timed alone with the judge's own clock and rounds (``harness.clocks.CudaClock``,
``harness.timing.run_timing``, under the device lock, so it never overlaps another kernelpro process's
measurement), for ``--timing-budget-s`` seconds instead of the judge's 20: its GPU time per call (events behind an
L2 flush) and its host's time to issue a call from an idle GPU. A problem is host-bound as the judge says it
(``Timing.host_bound``): issuing takes longer than running. Everything runs in this one process, without the
judge's worker isolation (the problems are the user's references, not candidates), so 200 problems take minutes.

Writes ``OUT/screen.json`` (the command, the device, each problem's times, its verdict or error, the counts per
level) and ``OUT/host_bound.txt``: the host-bound problems' paths, one per line, which ``kernelpro suite run``
takes as its SOURCE. The suite judges each again with the full judge; its report counts the problems its own
baselines find host-bound, and whether the recipes improved them.
"""

from __future__ import annotations

import argparse
import json
import platform
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.suite.sources import SourceError, resolve_sources  # noqa: E402


class Overran(Exception):
    pass


def screen_one(path: Path, settings: Settings, device: Any, clock: Any, workdir: Path) -> dict[str, Any]:
    """Build the problem's ``Model`` and time it alone: its GPU and issue medians, and whether it is host-bound."""
    import torch

    from kernelpro.harness.device_lock import device_lock
    from kernelpro.harness.timing.rounds import run_timing
    from kernelpro.harness.worker.loader import load_reference

    module = load_reference(path.read_text(), workdir)
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs()).to(device)
    torch.manual_seed(1)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    with torch.no_grad(), device_lock(str(device), settings.harness):
        run = run_timing({"reference": model}, [inputs], clock, settings.harness)
    timing = run.timings["reference"]
    return {"median_ms": round(timing.median_ms, 5), "gpu_median_ms": timing.gpu_median_ms,
            "issue_median_ms": timing.issue_median_ms, "host_bound": timing.host_bound, "rounds": run.rounds}


def tally(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per level: problems screened, screened without error, host-bound."""
    levels: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = levels.setdefault(f"level{row['level']}", {"problems": 0, "timed": 0, "host_bound": 0})
        counts["problems"] += 1
        counts["timed"] += "error" not in row
        counts["host_bound"] += bool(row.get("host_bound"))
    return levels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=Path, required=True, help="a directory holding KernelBench/level<N>/")
    parser.add_argument("--levels", default="1,2")
    parser.add_argument("--tasks", default=None, help="KernelBench task ids, e.g. 1-20,40 (all when left out)")
    parser.add_argument("--timing-budget-s", type=float, default=0.5)
    parser.add_argument("--per-problem-timeout-s", type=int, default=60)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("host_bound_screen.py needs a CUDA GPU: on a CPU no call is host-bound in the judge's sense")
    from kernelpro.harness.timing.clocks import make_clock

    settings = Settings()
    settings.harness.timing_budget_s = args.timing_budget_s
    device = torch.device("cuda")
    clock = make_clock(device, settings.harness)
    try:  # the suite's own reading of a KernelBench checkout: levels, task ids, task order
        found = resolve_sources([args.inputs], [int(v) for v in args.levels.split(",")], args.tasks)
    except SourceError as error:
        sys.exit(str(error))

    def overran(*_: Any) -> None:
        raise Overran(f"took longer than {args.per_problem_timeout_s} s")

    signal.signal(signal.SIGALRM, overran)
    rows, started = [], time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="host-bound-screen-"))
    for ref in found:
        path = Path(ref.path)
        row: dict[str, Any] = {"level": ref.level, "task": ref.task, "problem": ref.key, "path": ref.path}
        signal.alarm(args.per_problem_timeout_s)
        try:
            row |= screen_one(path, settings, device, clock, workdir)
        except Exception as exc:  # noqa: BLE001 - one problem's failure is its row, not the screen's end
            row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        finally:
            signal.alarm(0)
            torch.cuda.empty_cache()
        rows.append(row)
        print(f"{row['problem']}: " + (row.get("error") or
              f"gpu {row['gpu_median_ms']:.4f} ms, issue {row['issue_median_ms']:.4f} ms"
              + (", host-bound" if row["host_bound"] else "")), flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    host_bound = [row["path"] for row in rows if row.get("host_bound")]
    (args.out / "host_bound.txt").write_text("".join(f"{p}\n" for p in host_bound))
    report = {"command": " ".join(sys.argv), "device": torch.cuda.get_device_name(device),
              "torch": torch.__version__, "python": platform.python_version(),
              "timing_budget_s": args.timing_budget_s, "wall_s": round(time.monotonic() - started, 1),
              "levels": tally(rows), "host_bound": len(host_bound), "problems": rows}
    (args.out / "screen.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: report[k] for k in ("levels", "host_bound", "wall_s")}))


if __name__ == "__main__":
    main()
