"""The second opinion's arithmetic and its rule, apart from the judge's timer (``stats.py``, ``timing.py``): the
ratio of the two models' median times over paired rounds, its bootstrap 95% interval, and when the judge's
speedup and this one disagree.

The method is plain on purpose: one number per call (the host's clock around the call and a device
synchronisation), medians, and a percentile bootstrap that resamples whole rounds, so a round's reference and
candidate stay together. Sharing nothing with the judge's timer, it cannot share a flaw with it either.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kernelpro.harness.result import TIMING_DISAGREEMENT, EvalResult, GuardFinding, SecondOpinion

BOOTSTRAP_DRAWS = 2000


def ratio_of_medians(reference_ns: Sequence[float], candidate_ns: Sequence[float]) -> float:
    """The reference's median time over the candidate's: the speedup."""
    candidate = float(np.median(np.asarray(candidate_ns, dtype=float)))
    if candidate <= 0:
        raise ValueError("the candidate's median time is not positive")
    return float(np.median(np.asarray(reference_ns, dtype=float))) / candidate


def bootstrap_ci95(reference_ns: Sequence[float], candidate_ns: Sequence[float], draws: int = BOOTSTRAP_DRAWS,
                   seed: int | None = None) -> list[float]:
    """The 95% interval of ``ratio_of_medians``: paired rounds drawn with replacement ``draws`` times, the 2.5th
    and 97.5th percentiles of the ratios they give."""
    reference = np.asarray(reference_ns, dtype=float)
    candidate = np.asarray(candidate_ns, dtype=float)
    if reference.shape != candidate.shape or reference.ndim != 1 or len(reference) < 2:
        raise ValueError(f"paired rounds needed: {reference.shape} reference and {candidate.shape} candidate times")
    picks = np.random.default_rng(seed).integers(0, len(reference), size=(draws, len(reference)))
    ratios = np.median(reference[picks], axis=1) / np.median(candidate[picks], axis=1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return [float(low), float(high)]


def disagrees(judged: float, judged_ci95: Sequence[float] | None, second: float,
              second_ci95: Sequence[float] | None, margin: float) -> bool:
    """Beyond the noise: the two 95% intervals disjoint (a figure without one stands for itself) and the
    figures more than ``margin`` apart, relative to the smaller. Either direction counts."""
    a_low, a_high = judged_ci95 or (judged, judged)
    b_low, b_high = second_ci95 or (second, second)
    disjoint = a_high < b_low or b_high < a_low
    return disjoint and max(judged, second) / min(judged, second) > 1.0 + margin


def call(result: EvalResult, reference_ns: Sequence[float], candidate_ns: Sequence[float], margin: float,
         method: str, elapsed_s: float | None = None) -> SecondOpinion:
    """The second opinion on ``result`` (the judge's verdict) from the paired rounds' times, agreeing or not."""
    speedup = ratio_of_medians(reference_ns, candidate_ns)
    interval = bootstrap_ci95(reference_ns, candidate_ns)
    apart = result.speedup is not None and disagrees(result.speedup, result.speedup_ci95, speedup, interval, margin)
    return SecondOpinion(status="disagree" if apart else "agree", speedup=speedup, speedup_ci95=interval,
                         reference_ms=float(np.median(reference_ns)) / 1e6,
                         candidate_ms=float(np.median(candidate_ns)) / 1e6, rounds=len(reference_ns),
                         method=method, elapsed_s=elapsed_s)


def opinion_text(opinion: SecondOpinion) -> str:
    """``1.02x [0.98-1.05], agrees`` as the reports show it."""
    if opinion.speedup is None:
        return f"{opinion.status}: {opinion.message}" if opinion.message else opinion.status
    low, high = opinion.speedup_ci95 or (opinion.speedup, opinion.speedup)
    word = {"agree": "agrees", "disagree": "disagrees"}.get(opinion.status, opinion.status)
    return f"{opinion.speedup:.2f}x [{low:.2f}-{high:.2f}], {word}"


def settle(result: EvalResult, opinion: SecondOpinion) -> EvalResult:
    """``result`` with the second opinion recorded; a disagreeing one, or a candidate that failed where it was
    timed again, adds the ``timing_disagreement`` finding, so the verdict no longer improves on the reference."""
    settled = result.model_copy(deep=True)
    settled.second_opinion = opinion
    if opinion.status in ("disagree", "failed") and not any(g.reason == TIMING_DISAGREEMENT for g in settled.guards):
        judged = f"{result.speedup:.2f}x" if result.speedup is not None else "its speedup"
        message = (f"the judge measured {judged}, a fresh process timed {opinion_text(opinion)}"
                   if opinion.status == "disagree" else f"timed again in a fresh process, it failed: {opinion.message}")
        settled.guards.append(GuardFinding(reason=TIMING_DISAGREEMENT, severity="warn", source="dynamic",
                                           message=message))
    return settled
