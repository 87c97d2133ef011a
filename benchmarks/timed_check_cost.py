"""What checking every timed call's output costs, element by element against sampled positions
(``harness.timed_check_elements``), on problems whose outputs are large and whose calls are cheap.

    python benchmarks/timed_check_cost.py --device cpu --repeats 2 --out benchmarks/results/timed_check_cost_cpu.json
    python3 benchmarks/timed_check_cost.py --device cuda --elements 1610612736 --repeats 2 --out OUT.json

Each problem is a sigmoid over ``--elements`` float32 values (the size of KernelBench's level-1 activations,
4096 x 393216, on a GPU), judged against itself renamed with the judge's first-judgment settings, once with
every element of every timed output compared (``0``) and once at sampled positions (the default), in
alternating order. Per setting: the timing phase's seconds, its rounds, the seconds a round took beyond the two
timed calls (drawing inputs, the checks, the flush), on CUDA the memory the timing phase held at its peak
(earlier rounds' outputs are kept by their sampled values), the verdict and its interval.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """One sigmoid over {elements} elements: a large output, a cheap call."""

    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn({elements})]


def get_init_inputs():
    return []
'''


def measure(device: str, elements: int, repeats: int) -> dict:
    from kernelpro.config import Settings
    from kernelpro.harness.pipeline import Pipeline
    from kernelpro.problem import load_problem

    default = Settings().harness.timed_check_elements
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sigmoid_large.py"
        path.write_text(PROBLEM.format(elements=elements))
        problem = load_problem(path)
    source = problem.source.replace("class Model(nn.Module):", "class ModelNew(nn.Module):")
    rows = []
    for index in range(repeats):
        for sampled in ((default, 0) if index % 2 == 0 else (0, default)):
            settings = Settings()
            settings.harness.timed_check_elements = sampled
            with Pipeline(device, settings) as pipeline:
                [result] = pipeline.judge([(problem, source)])
            timing = result.details.get("timing") or {}
            seconds = (result.details.get("phase_s") or {}).get("timing")
            calls_ms = (result.reference_ms or 0.0) + (result.candidate_ms or 0.0)
            rows.append({"repeat": index + 1, "timed_check_elements": sampled, "status": result.status,
                         "reason": result.reason, "timing_s": seconds, "rounds": timing.get("rounds"),
                         "stopped_by": timing.get("stopped_by"), "outputs_checked": timing.get("outputs_checked"),
                         "outputs_sampled": timing.get("outputs_sampled"), "gpu_peak_mb": timing.get("gpu_peak_mb"),
                         "round_overhead_ms": round(timing["wall_s"] / timing["rounds"] * 1e3 - calls_ms, 2)
                         if timing.get("rounds") else None,
                         "reference_ms": result.reference_ms, "candidate_ms": result.candidate_ms,
                         "speedup": result.speedup, "speedup_ci95": result.speedup_ci95,
                         "speed_verdict": result.speed_verdict})
            print(json.dumps(rows[-1]), flush=True)

    def summary(sampled: int) -> dict:
        mine = [r for r in rows if r["timed_check_elements"] == sampled and r["timing_s"] is not None]
        return {"verdicts": len(mine), "timing_s": round(sum(r["timing_s"] for r in mine), 2),
                "round_overhead_ms_median": statistics.median(r["round_overhead_ms"] for r in mine) if mine else None,
                "speed_verdicts": sorted(r["speed_verdict"] for r in mine)}

    return {"elements": elements, "device": device,
            "summary": {"sampled": summary(default), "every_element": summary(0)}, "verdicts": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--elements", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    started = time.monotonic()
    report = measure(args.device, args.elements, args.repeats)
    report = {"command": " ".join(sys.argv), "python": platform.python_version(),
              "wall_s": round(time.monotonic() - started, 1), **report}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["summary"]))


if __name__ == "__main__":
    main()
