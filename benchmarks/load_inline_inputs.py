"""Make the inputs of ``benchmarks/load_inline_ahead.py``: real load_inline candidates with their problems.

    python benchmarks/load_inline_inputs.py \\
        --leaderboard /work/.mirror/anneouyang+KernelBenchLeaderboard/repo \\
        --kernelbench /work/.mirror/ScalingIntelligence+KernelBench/repo \\
        --out benchmarks/inputs/load_inline --count 32

The candidates are the public KernelBench leaderboard's (``docs/assets/raw_data.json``, every one a
``load_inline`` ``ModelNew``); the problems are KernelBench's own files. Both are read from bare git
directories (``fetch``'s mirrors) or checkouts. One candidate per problem: every level-1 loss problem with
a 0-dimensional output first (MSE, cross-entropy, Huber, KL divergence, triplet margin, hinge), then the
others in turn over the levels, fastest reference first, so a batch judges quickly. Each case is a directory
with ``reference.py``, ``candidate.py`` and ``meta.json`` (as ``judge_real_candidates.py`` reads them); the whole
set is a few hundred KB, under ``benchmarks/inputs/`` (ignored by git).
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any

LOSS_WORDS = ("Loss", "Divergence")
MAX_REFERENCE_MS = 20.0  # the leaderboard's baseline time: slower problems make the batch's judging long


def read(repo: Path, path: str) -> str:
    """A file of a checkout or of a bare git directory."""
    if (repo / path).is_file():
        return (repo / path).read_text(encoding="utf-8")
    return subprocess.run(["git", "--git-dir", str(repo), "show", f"HEAD:{path}"], capture_output=True, text=True,
                          check=True).stdout


def problem_files(kernelbench: Path) -> dict[tuple[int, int], str]:
    """(level, problem id) -> path of KernelBench's problem file."""
    if (kernelbench / "KernelBench").is_dir():
        names = [str(p.relative_to(kernelbench)) for p in (kernelbench / "KernelBench").rglob("*.py")]
    else:
        names = subprocess.run(["git", "--git-dir", str(kernelbench), "ls-tree", "-r", "--name-only", "HEAD"],
                               capture_output=True, text=True, check=True).stdout.split()
    found = {}
    for name in names:
        parts = name.split("/")
        if len(parts) == 3 and parts[0] == "KernelBench" and parts[1].startswith("level") and parts[2][0].isdigit():
            found[(int(parts[1].removeprefix("level")), int(parts[2].split("_", 1)[0]))] = name
    return found


def kernelbench_id(entry: dict[str, Any]) -> tuple[int, int]:
    """(level, KernelBench's problem number) of a leaderboard entry: the leaderboard counts problems from 0
    (its problem 39 is KernelBench's 40_LayerNorm), KernelBench's file names from 1."""
    return entry["level"], entry["problem_id"] + 1


def choose(entries: list[dict[str, Any]], problems: dict[tuple[int, int], str], count: int) -> list[dict[str, Any]]:
    by_problem: dict[tuple[int, int], dict[str, Any]] = {}
    for entry in sorted(entries, key=lambda e: (e["baseline_torch_time"] or 1e9, e["file"])):
        key = kernelbench_id(entry)
        if key in problems and "load_inline" in entry["code"] and key not in by_problem \
                and (entry["baseline_torch_time"] or 1e9) <= MAX_REFERENCE_MS:
            by_problem[key] = entry
    losses = [k for k in sorted(by_problem) if k[0] == 1 and any(w in problems[k] for w in LOSS_WORDS)]
    chosen = list(losses)
    queues = {level: [k for k in sorted(by_problem, key=lambda k: (by_problem[k]["baseline_torch_time"], k))
                      if k[0] == level and k not in chosen] for level in (1, 2, 3)}
    while len(chosen) < count and any(queues.values()):
        for level in (1, 2, 3):
            if queues[level] and len(chosen) < count:
                chosen.append(queues[level].pop(0))
    return [by_problem[k] for k in chosen[:count]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--leaderboard", type=Path, required=True, help="KernelBenchLeaderboard checkout or git dir")
    parser.add_argument("--kernelbench", type=Path, required=True, help="KernelBench checkout or git dir")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/inputs/load_inline"))
    parser.add_argument("--count", type=int, default=32)
    args = parser.parse_args()
    entries = json.loads(read(args.leaderboard, "docs/assets/raw_data.json"))
    problems = problem_files(args.kernelbench)
    chosen = choose(entries, problems, args.count)
    args.out.mkdir(parents=True, exist_ok=True)
    for entry in chosen:
        level, number = kernelbench_id(entry)
        path = problems[(level, number)]
        case = args.out / f"l{level}_p{number:03d}_{entry['file'][:8]}"
        case.mkdir(exist_ok=True)
        (case / "reference.py").write_text(read(args.kernelbench, path), encoding="utf-8")
        (case / "candidate.py").write_text(entry["code"], encoding="utf-8")
        meta = {"source": "anneouyang/KernelBenchLeaderboard docs/assets/raw_data.json", "problem": path,
                **{k: entry[k] for k in ("level", "problem_id", "model", "file", "torch_speedup",
                                          "baseline_torch_time", "kernel_eval_time")}}
        (case / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    print(f"{len(chosen)} cases in {args.out}")


if __name__ == "__main__":
    main()
