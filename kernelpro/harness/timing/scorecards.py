"""The speedup in KernelBench's convention, beside kernelpro's own: the same timed rounds, read its way.

KernelBench times each call with CUDA events behind an L2 flush and reports the mean, with no floor for the
host's time to issue the call; kernelpro takes each round's cost as the larger of the GPU span and the issue time
and reports the median of paired ratios. Both are defensible, and they differ most on host-bound calls, where
the events see a GPU mostly idle. This figure is the referee's GPU spans (on a CPU, its host times) of the timed
rounds, warm-up left out: the mean reference time over the mean candidate time, with a paired bootstrap interval.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

RESAMPLES = 2000
GPU_METHOD = "CUDA events behind an L2 flush, mean of calls, no host floor (KernelBench's convention)"
CPU_METHOD = "host clock, mean of calls, no floor (KernelBench's convention read on a CPU)"


class KernelBenchScore(BaseModel):
    """A verdict's speedup in KernelBench's convention (``scorecards``)."""

    speedup: float
    speedup_ci95: list[float]
    reference_ms: float
    candidate_ms: float
    rounds: int
    method: str


def kernelbench_score(reference_ms: Sequence[float], candidate_ms: Sequence[float], on_gpu: bool,
                      seed: int = 0) -> KernelBenchScore | None:
    """The ratio of the two means over paired rounds, and its 95% bootstrap interval (rounds resampled in
    pairs); None with fewer than three rounds or a time that is not positive."""
    import numpy as np  # here: the verdict's model (``result.py``) imports this module before a worker walls itself in
    rounds = min(len(reference_ms), len(candidate_ms))
    if rounds < 3:
        return None
    ref, cand = np.asarray(reference_ms[:rounds], dtype=float), np.asarray(candidate_ms[:rounds], dtype=float)
    if ref.mean() <= 0 or cand.mean() <= 0:
        return None
    picks = np.random.default_rng(seed).integers(0, rounds, size=(RESAMPLES, rounds))
    ratios = ref[picks].mean(axis=1) / np.maximum(cand[picks].mean(axis=1), 1e-12)
    low, high = np.percentile(ratios, [2.5, 97.5])
    estimate = float(ref.mean() / cand.mean())
    return KernelBenchScore(speedup=estimate, speedup_ci95=[round(float(min(low, estimate)), 6),
                                                           round(float(max(high, estimate)), 6)],
                            reference_ms=float(ref.mean()), candidate_ms=float(cand.mean()), rounds=rounds,
                            method=GPU_METHOD if on_gpu else CPU_METHOD)
