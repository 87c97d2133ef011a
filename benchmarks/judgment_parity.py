"""Does the judge's time for one kernel depend on what the previous judgment did? A 1024x1024 fp32 matmul
(about 61 us on an H200) is judged 12 times in a row with ``timing.time_models``, for several counts of warm-up
calls, timed trials and host issue-time calls; "odd-even" is the mean of the odd judgments less the even ones.

    PYTHONPATH=. python benchmarks/judgment_parity.py OUT.json

With the issue-time calls run on a warm L2 (before they were put behind the flush), the time stepped by
0.8-1 us every second judgment with 10 issue calls, every fourth with 1, 9 or 11, and not at all with none.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import kernelpro.harness.timing.clocks as clocks  # noqa: E402
import kernelpro.harness.timing.rounds as timing  # noqa: E402
from kernelpro.config import HarnessSettings  # noqa: E402

BASE = {"timing_trials": 50, "min_timing_trials": 50, "timing_budget_s": 60.0, "warmup": 3}
VARIANTS = [  # label, settings changed, issue-time calls
    ("current", {}, 10), ("issue0", {}, 0), ("issue11", {}, 11), ("warmup4", {"warmup": 4}, 10),
    ("trials51", {"timing_trials": 51, "min_timing_trials": 51}, 10), ("current_again", {}, 10),
    ("issue1", {}, 1), ("warmup2_issue9", {"warmup": 2}, 9),
]


def matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.mm(x, y)


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.randn(1024, 1024, device="cuda"), torch.randn(1024, 1024, device="cuda")
    clock = clocks.make_clock(torch.device("cuda"), HarnessSettings(**BASE))
    report = {}
    for label, changed, issue_calls in VARIANTS:
        settings = HarnessSettings(**{**BASE, **changed})
        clock.issue_calls = issue_calls
        medians = [timing.time_models({"m": matmul}, [[a, b]], clock, settings)["m"].median_ms * 1e3
                   for _ in range(12)]
        odd_even = statistics.fmean(medians[1::2]) - statistics.fmean(medians[0::2])
        spread = (max(medians) - min(medians)) / statistics.median(medians)
        report[label] = medians
        print(f"{label:15s} spread {spread:6.2%} odd-even {odd_even:+.2f} us", [round(m, 2) for m in medians],
              flush=True)
    Path(sys.argv[1]).write_text(json.dumps(report))


if __name__ == "__main__":
    main()
