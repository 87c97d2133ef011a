"""Judge real LLM-written KernelBench candidates and tabulate the verdicts by reason.

    # once: cases from released candidate files (the CUDA-L1 release's JSON or JSON-lines files, each with
    # level, task, ref_code and custom_code), half the most-claimed and half spread over the task ids per level
    python benchmarks/judge_real_candidates.py prepare --out CASES \\
        --source first=PATH/h100_xsm.json --source current=PATH/codes/h100.json --per-level 8
    # then, on the GPU host
    PYTHONPATH=. python benchmarks/judge_real_candidates.py judge CASES --device cuda \\
        --out benchmarks/results/real_candidates_h200.json

Case directories are inputs, not results: keep them under ``benchmarks/inputs/`` (ignored by git).

A case is a directory holding ``reference.py`` (the KernelBench problem), ``candidate.py`` (the ``ModelNew``)
and ``meta.json`` (where it came from and the speedup its authors claimed). Every case goes through one
judging pipeline, as ``kernelpro eval`` judges a batch. The JSON has every case's verdict, its warnings and
problem findings, and the counts by verdict and reason.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelpro.config import Settings  # noqa: E402
from kernelpro.harness.pipeline import Pipeline  # noqa: E402
from kernelpro.harness.result import EvalResult  # noqa: E402
from kernelpro.problem import ProblemError, parse_problem  # noqa: E402


# -- prepare ----------------------------------------------------------------------------------------
def read_release(path: Path) -> list[dict[str, Any]]:
    """Entries ``{level, task, ref_code, custom_code, claimed}`` of a release file: a JSON object of levels, each a
    list of tasks, or JSON lines with ``level_id``."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        rows = [dict(entry, level_id=level) for level, entries in data.items() for entry in entries]
    except json.JSONDecodeError:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    entries = []
    for row in rows:
        claimed = row.get("score", row.get("score_default"))
        if not row.get("custom_code") or not row.get("ref_code"):
            continue
        entries.append({"level": int(row["level_id"]), "task": int(row["task_id"]), "ref_code": row["ref_code"],
                        "custom_code": row["custom_code"],
                        "claimed": float(claimed) if claimed not in (None, "") else None})
    return entries


def select(entries: list[dict[str, Any]], per_level: int) -> list[dict[str, Any]]:
    """Per level, the ``per_level // 2`` highest claimed speedups (where empty speedups hide) and the rest spread
    evenly over the remaining task ids (what typical candidates look like)."""
    chosen = []
    for level in sorted({e["level"] for e in entries}):
        pool = sorted((e for e in entries if e["level"] == level), key=lambda e: e["task"])
        top = sorted(pool, key=lambda e: -(e["claimed"] or 0.0))[:per_level // 2]
        rest = [e for e in pool if e not in top]
        want = per_level - len(top)
        spread = [rest[round(i * (len(rest) - 1) / max(1, want - 1))] for i in range(want)] if rest and want else []
        chosen += sorted({id(e): e for e in top + spread}.values(), key=lambda e: e["task"])
    return chosen


def prepare(args: argparse.Namespace) -> None:
    """The same (level, task) pairs from every source, chosen on the sources that claim speedups, so versions of a
    release can be compared task by task."""
    out = Path(args.out)
    sources = []
    for spec in args.source:
        label, _, path = spec.rpartition("=")
        sources.append((label or Path(path).stem, Path(path), read_release(Path(path))))
    claiming = [entries for _, _, entries in sources if any(e["claimed"] is not None for e in entries)]
    tasks = {(e["level"], e["task"]) for entries in (claiming or [sources[0][2]]) for e in select(entries,
                                                                                                 args.per_level)}
    written = 0
    for label, path, entries in sources:
        for entry in (e for e in entries if (e["level"], e["task"]) in tasks):
            case = out / f"{label}_L{entry['level']}_T{entry['task']:03d}"
            case.mkdir(parents=True, exist_ok=True)
            (case / "reference.py").write_text(entry["ref_code"], encoding="utf-8")
            (case / "candidate.py").write_text(entry["custom_code"], encoding="utf-8")
            (case / "meta.json").write_text(json.dumps({"source": label, "file": path.name, "level": entry["level"],
                                                        "task": entry["task"], "claimed_speedup": entry["claimed"]},
                                                       indent=1))
            written += 1
    print(f"{written} cases under {out}")


# -- judge ------------------------------------------------------------------------------------------
def verdict_key(result: EvalResult) -> str:
    return result.status if result.reason is None else f"{result.status}/{result.reason}"


def row_for(case: Path, meta: dict[str, Any], result: EvalResult) -> dict[str, Any]:
    return {
        "case": case.name, **meta, "status": result.status, "reason": result.reason, "verdict": verdict_key(result),
        "speedup": result.speedup, "candidate_ms": result.candidate_ms, "reference_ms": result.reference_ms,
        "warnings": sorted({g.reason for g in result.guards if g.severity == "warn"}),
        "rejections": sorted({g.reason for g in result.guards if g.severity == "reject"}),
        "problem_findings": [f.reason for f in result.problem_findings],
        "message": result.message[:400], "elapsed_s": result.elapsed_s,
    }


def tabulate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    passed = [r for r in rows if r["status"] == "ok"]
    return {
        "cases": len(rows),
        "by_verdict": dict(Counter(r["verdict"] for r in rows).most_common()),
        "by_status": dict(Counter(r["status"] for r in rows).most_common()),
        "warnings_on_passing": dict(Counter(w for r in passed for w in r["warnings"]).most_common()),
        "problem_findings": dict(Counter(f for r in rows for f in r["problem_findings"]).most_common()),
        "passing_without_findings": sum(1 for r in passed if not r["warnings"] and not r["problem_findings"]),
        "by_source_and_verdict": {source: dict(Counter(r["verdict"] for r in rows if r.get("source") == source))
                                  for source in sorted({str(r.get("source")) for r in rows})},
    }


def judge_cases(args: argparse.Namespace) -> None:
    cases = sorted(p for p in Path(args.cases).iterdir() if (p / "candidate.py").is_file())
    if args.without:
        cases = [c for c in cases if args.without not in (c / "candidate.py").read_text(errors="replace")]
    cases = cases[:args.limit or None]
    settings = Settings()
    if args.timing_budget_s is not None:
        settings.harness.timing_budget_s = args.timing_budget_s
    rows, items, metas = [], [], []
    for case in cases:
        meta = json.loads((case / "meta.json").read_text()) if (case / "meta.json").is_file() else {}
        try:
            problem = parse_problem((case / "reference.py").read_text(encoding="utf-8"), name=case.name)
        except ProblemError as exc:
            rows.append({"case": case.name, **meta, "status": "problem_invalid", "reason": None,
                         "verdict": "problem_invalid", "warnings": [], "rejections": [], "problem_findings": [],
                         "message": str(exc)[:400]})
            continue
        items.append((problem, (case / "candidate.py").read_text(encoding="utf-8", errors="replace")))
        metas.append((case, meta))
    started = time.monotonic()
    with Pipeline(args.device, settings) as pipeline:
        results = pipeline.judge(items)
        device = pipeline.device
    elapsed = time.monotonic() - started
    for (case, meta), result in zip(metas, results, strict=True):
        rows.append(row_for(case, meta, result))
        print(f"{case.name:28s} {rows[-1]['verdict']:36s} "
              f"{'' if result.speedup is None else f'{result.speedup:.2f}x':>8s} "
              f"{','.join(rows[-1]['warnings'] + rows[-1]['problem_findings'])}", flush=True)
    rows.sort(key=lambda r: r["case"])
    report = {"command": " ".join(sys.argv), "device": device, "gpu": _gpu_name(device),
              "python": platform.python_version(), "torch": _torch_version(), "judged_in_s": round(elapsed, 1),
              "summary": tabulate(rows), "rows": rows}
    print(json.dumps(report["summary"], indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


def _gpu_name(device: str) -> str | None:
    import torch

    return torch.cuda.get_device_name(0) if device.startswith("cuda") and torch.cuda.is_available() else None


def _torch_version() -> str:
    import torch

    return torch.__version__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    prep = commands.add_parser("prepare", help="write case directories from released candidate files")
    prep.add_argument("--source", action="append", required=True, help="LABEL=PATH of a release file (repeatable)")
    prep.add_argument("--out", required=True, help="directory to write the cases into")
    prep.add_argument("--per-level", type=int, default=8, help="cases per level and source")
    run = commands.add_parser("judge", help="judge every case directory under CASES")
    run.add_argument("cases")
    run.add_argument("--device", default="cuda")
    run.add_argument("--out", help="JSON file for the verdicts and their counts")
    run.add_argument("--limit", type=int, default=0, help="judge only the first N cases")
    run.add_argument("--without", default="", help="skip candidates whose source contains this text "
                     "(e.g. load_inline, whose builds take about a minute each in the worker)")
    run.add_argument("--timing-budget-s", type=float, default=None, help="override harness.timing_budget_s")
    args = parser.parse_args()
    prepare(args) if args.command == "prepare" else judge_cases(args)


if __name__ == "__main__":
    main()
