"""The measured numbers the search simulation draws from (``search_world.py``), derived from public releases.

Writes ``benchmarks/data/search_world.json``, which is committed, so the simulation runs without the sources:

- ``problems``: one row per KernelBench task of CUDA-L1's H100 release (``optimized_cuda_code/h100.json`` of
  github.com/deepreinforce-ai/CUDA-L1, 250 tasks of levels 1-3): ``kernel``, the speedup of CUDA-L1's
  RL-found code over the eager reference (``score_default``), and ``graph``, the speedup of the same reference
  captured in a CUDA graph (``score_default / score_cuda_graph``: the release's ``score_cuda_graph`` is the CUDA
  graph version's time over CUDA-L1's). A task without custom code (the release's note: the RL found nothing
  faster) has ``kernel`` 1.0 and no ``graph``. Left out: level 2 tasks 66, 80 and 83, whose outputs never depend
  on their inputs (our judge's ``constant_output`` finding on the H200, ``results/real_candidates_h200.json``).
- ``first_attempt_ratios``: how far a first, one-shot LLM kernel lands below the best known kernel of the same
  task: each correct entry of the KernelBench leaderboard (github.com/anneouyang/KernelBenchLeaderboard,
  ``docs/assets/raw_data.json``: seven 2024 models, one sample each, on an L40S) divided by CUDA-L1's best on
  the L40 (``optimized_cuda_code/l40.json``, the nearest GPU of that release) for the same task.
- ``graph_share``: the share of CUDA-L1's H100 codes that capture a CUDA graph (26 of 227): how often a strong
  model reaches for graph capture.
- ``one_shot_correct``: the share of the leaderboard's attempts that were correct (its entries over seven models
  times 250 problems).

Run (the two repositories fetched as bare mirrors): ``python benchmarks/search_world_data.py``
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

MIRRORS = Path("/work/.mirror")
CUDA_L1 = MIRRORS / "deepreinforce-ai+CUDA-L1" / "repo"
LEADERBOARD = MIRRORS / "anneouyang+KernelBenchLeaderboard" / "repo"
OUT = Path(__file__).resolve().parent / "data" / "search_world.json"
CONSTANT_OUTPUT = {(2, 66), (2, 80), (2, 83)}
LEADERBOARD_MODELS, KERNELBENCH_PROBLEMS = 7, 250
GRAPH_CAPTURE = re.compile(r"CUDAGraph|cuda\.graph\(|torch\.cuda\.graphs")


def git_show(repo: Path, path: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), "show", f"HEAD:{path}"], check=True,
                          capture_output=True, text=True).stdout


def release(gpu: str) -> list[dict]:
    return [json.loads(line) for line in git_show(CUDA_L1, f"optimized_cuda_code/{gpu}.json").splitlines() if line]


def problems() -> list[dict]:
    rows = []
    for entry in release("h100"):
        key = (entry["level_id"], entry["task_id"])
        if key in CONSTANT_OUTPUT:
            continue
        kernel, graph_ratio = entry.get("score_default"), entry.get("score_cuda_graph")
        rows.append({"level": key[0], "task": key[1], "kernel": round(kernel, 4) if kernel else 1.0,
                     "graph": round(kernel / graph_ratio, 4) if kernel and graph_ratio else None})
    return rows


def graph_share() -> float:
    """The share of CUDA-L1's H100 codes that capture a CUDA graph."""
    codes = [e["custom_code"] for e in release("h100") if e.get("custom_code")]
    return round(sum(1 for c in codes if GRAPH_CAPTURE.search(c)) / len(codes), 4)


def first_attempt_ratios() -> tuple[list[float], float]:
    best = {(e["level_id"], e["task_id"]): e.get("score_default") for e in release("l40")}
    entries = json.loads(git_show(LEADERBOARD, "docs/assets/raw_data.json"))
    ratios = []
    for entry in entries:
        key = (entry["level"], entry["problem_id"] + 1)  # the leaderboard counts problems from 0
        if best.get(key) and entry.get("torch_speedup"):
            ratios.append(round(entry["torch_speedup"] / best[key], 4))
    return sorted(ratios), round(len(entries) / (LEADERBOARD_MODELS * KERNELBENCH_PROBLEMS), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    ratios, correct = first_attempt_ratios()
    data = {"source": "CUDA-L1 optimized_cuda_code/h100.json and l40.json; KernelBenchLeaderboard raw_data.json",
            "problems": problems(), "first_attempt_ratios": ratios, "one_shot_correct": correct,
            "graph_share": graph_share()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{len(data['problems'])} problems, {len(ratios)} first-attempt ratios, one-shot correct {correct}, "
          f"graph share {data['graph_share']}")


if __name__ == "__main__":
    main()
