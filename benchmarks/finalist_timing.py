"""What the finalists' re-judgment spends on timing, and what stopping once a finalist's call is settled
(``harness.settled_ci_width``: it cannot be called faster, or it is faster beyond doubt) saves.

    python benchmarks/finalist_timing.py tabulate \\
        benchmarks/results/suite_kernelbench_h200_recipes_40/suite_dir.tar.xz \\
        --out benchmarks/results/finalist_timing_h200_recipes_40.json
    python benchmarks/finalist_timing.py measure --device cpu --repeats 2 \\
        --out benchmarks/results/finalist_timing_cpu.json [--problems tests/data/problems/matmul_relu.py ...]

``tabulate`` reads a suite's runs' verdicts (a suite directory or its ``.tar.xz``; answered copies left out):
the timing phase's seconds of candidates' first judgments and of finalists' re-judgments, what stopped each,
the finalists whose re-judgment did not call them faster (whose timing beyond a first judgment's width decided
nothing), and for those called faster a projection: their seconds per round times the rounds a first
judgment's width took (at least the finalists' least rounds), which is where the rule stops them.
``measure`` judges, with the finalists' settings (``Settings.for_finalists``), with and without
``settled_ci_width``, in alternating order, each problem's reference renamed (``same``: a candidate at 1.00x,
as a recipe that changes nothing is) and, for a problem with a line marked ``# redundant pass``, the
reference without it (``lean``: a candidate of known, real gain): per setting and candidate, the timing phase's
seconds, the rounds, what stopped them and the speedup with its interval and call.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROBLEMS = [*(ROOT / "tests" / "data" / "problems" / f"{name}.py" for name in ("matmul_relu", "softmax_wide")),
            *(ROOT / "benchmarks" / "problems" / "noise" / f"{name}.py"
              for name in ("layernorm_gelu_small", "gemm_multiply_leakyrelu"))]


def _verdicts(suite: Path) -> list[tuple[bool, dict, dict | None]]:
    """(whether a finalist's re-judgment, the verdict, a finalist's first judgment) for every verdict judged in
    the suite's runs."""
    found = []
    for path in sorted(suite.glob("**/runs/*/candidates/*.json")):
        verdict = json.loads(path.read_text())
        if "status" in verdict and not (verdict.get("details") or {}).get("answered_by"):
            final = path.name.endswith(".final.json")
            first = path.with_name(path.name.removesuffix(".final.json") + ".json") if final else None
            found.append((final, verdict, json.loads(first.read_text()) if first and first.exists() else None))
    return found


def _projected_s(final: dict, first: dict | None, least_rounds: int) -> float | None:
    """A faster finalist's timing had it stopped at a first judgment's width: its seconds per round times the
    rounds its first judgment took to that width (at least ``least_rounds``); None without a first judgment
    that reached it."""
    timing, seconds = (final.get("details") or {}).get("timing") or {}, \
        ((final.get("details") or {}).get("phase_s") or {}).get("timing")
    first_timing = ((first or {}).get("details") or {}).get("timing") or {}
    if not timing.get("rounds") or seconds is None or first_timing.get("stopped_by") != "interval":
        return None
    rounds = max(least_rounds, first_timing["rounds"])
    return min(seconds, seconds / timing["rounds"] * rounds)


def tabulate(source: Path) -> dict:
    from kernelpro.config import Settings

    least_rounds = Settings().for_finalists().harness.min_timing_trials
    with tempfile.TemporaryDirectory() as tmp:
        suite = source
        if source.is_file():
            with tarfile.open(source) as archive:
                archive.extractall(tmp, filter="data")
            suite = Path(tmp)
        verdicts = _verdicts(suite)
    parts: dict[str, dict] = {}
    projected = {"finalists_faster": 0, "with_first_at_width": 0, "timing_s": 0.0, "projected_s": 0.0}
    for final, verdict, first in verdicts:
        details = verdict.get("details") or {}
        seconds = (details.get("phase_s") or {}).get("timing")
        if seconds is None:
            continue
        part = parts.setdefault("finalists" if final else "first", {
            "verdicts": 0, "timing_s": 0.0, "stopped_by": Counter(), "not_faster": 0, "not_faster_timing_s": 0.0})
        part["verdicts"] += 1
        part["timing_s"] += seconds
        part["stopped_by"][(details.get("timing") or {}).get("stopped_by", "unknown")] += 1
        if verdict.get("speed_verdict") != "faster":
            part["not_faster"] += 1
            part["not_faster_timing_s"] += seconds
        elif final:
            projected["finalists_faster"] += 1
            if (estimate := _projected_s(verdict, first, least_rounds)) is not None:
                projected["with_first_at_width"] += 1
                projected["timing_s"] += seconds
                projected["projected_s"] += estimate
    for part in parts.values():
        part["stopped_by"] = dict(part["stopped_by"])
        for key in ("timing_s", "not_faster_timing_s"):
            part[key] = round(part[key], 1)
    projected = {key: round(value, 1) if isinstance(value, float) else value for key, value in projected.items()}
    return {"source": str(source), "parts": parts,
            "timing_s": round(sum(p["timing_s"] for p in parts.values()), 1),
            "faster_finalists_projection": {**projected, "least_rounds": least_rounds}}


def _candidates(path: Path, source: str) -> list[tuple[str, str]]:
    """(kind, source): the reference renamed, and without its redundant pass where it marks one."""
    from benchmarks.judge_noise import as_candidate

    found = [("same", as_candidate(source, lean=False))]
    if "# redundant pass" in source:
        found.append(("lean", as_candidate(source, lean=True)))
    return found


def measure(device: str, problems: list[Path], repeats: int) -> dict:
    from kernelpro.config import Settings
    from kernelpro.harness.pipeline import Pipeline
    from kernelpro.problem import load_problem

    finals = Settings().for_finalists()
    rows = []
    items = []
    for path in problems:
        problem = load_problem(path)
        items += [(path.stem, kind, problem, source) for kind, source in _candidates(path, problem.source)]
    for index in range(repeats):
        for settled in ((True, False) if index % 2 == 0 else (False, True)):
            settings = finals.model_copy(deep=True)
            if not settled:
                settings.harness.settled_ci_width = None
            with Pipeline(device, settings) as pipeline:
                for name, kind, problem, source in items:
                    [result] = pipeline.judge([(problem, source)])
                    timing = result.details.get("timing") or {}
                    rows.append({"repeat": index + 1, "settled": settled, "problem": name, "candidate": kind,
                                 "status": result.status, "reason": result.reason,
                                 "timing_s": (result.details.get("phase_s") or {}).get("timing"),
                                 "rounds": timing.get("rounds"), "stopped_by": timing.get("stopped_by"),
                                 "speedup": result.speedup, "speedup_ci95": result.speedup_ci95,
                                 "speed_verdict": result.speed_verdict})
                    print(json.dumps(rows[-1]), flush=True)

    def summary(settled: bool, kind: str) -> dict:
        mine = [r for r in rows if r["settled"] is settled and r["candidate"] == kind and r["timing_s"] is not None]
        return {"verdicts": len(mine), "timing_s": round(sum(r["timing_s"] for r in mine), 2),
                "timing_median_s": round(statistics.median(r["timing_s"] for r in mine), 3) if mine else None,
                "stopped_by": dict(Counter(r["stopped_by"] for r in mine)),
                "speed_verdicts": dict(Counter(r["speed_verdict"] for r in mine))}

    kinds = sorted({kind for _, kind, _, _ in items})
    return {"settings": {"timing_budget_s": finals.harness.timing_budget_s,
                         "speedup_ci_width": finals.harness.speedup_ci_width,
                         "settled_ci_width": finals.harness.settled_ci_width,
                         "min_timing_trials": finals.harness.min_timing_trials},
            "summary": {("settled" if settled else "not_settled"): {kind: summary(settled, kind) for kind in kinds}
                        for settled in (True, False)},
            "verdicts": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    table = sub.add_parser("tabulate")
    table.add_argument("source", type=Path, help="A suite directory or its .tar.xz.")
    table.add_argument("--out", type=Path, required=True)
    run = sub.add_parser("measure")
    run.add_argument("--device", default="cpu")
    run.add_argument("--problems", type=Path, nargs="*", default=PROBLEMS)
    run.add_argument("--repeats", type=int, default=4)
    run.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    started = time.monotonic()
    report = tabulate(args.source) if args.what == "tabulate" else measure(args.device, args.problems, args.repeats)
    report = {"command": " ".join(sys.argv), "python": platform.python_version(),
              "wall_s": round(time.monotonic() - started, 1), **report}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report.get("summary") or report.get("parts")))


if __name__ == "__main__":
    main()
