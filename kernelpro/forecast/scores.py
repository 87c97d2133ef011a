"""The scores of a forecaster on judged candidates (GPU Forecasters' set, and the regression view).

Every function takes ``probs`` (n x 8, rows summing to 1, column b is class b + 1), ``truth`` (n classes in 1..8)
and where needed the measured speedups. Failures (class 0) are never predicted, so they are not scored here;
``score_forecasts`` says how many it left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kernelpro.forecast.classes import CLASS_SPEEDUP, CONFIDENCES, N_CLASSES, Forecast, confidence

TOP_FRACTIONS = (0.01, 0.10, 0.50)


def _onehot(truth: np.ndarray) -> np.ndarray:
    return np.eye(N_CLASSES)[truth - 1]


def accuracy(probs: np.ndarray, truth: np.ndarray, within: int = 0) -> float:
    return float(np.mean(np.abs(probs.argmax(1) + 1 - truth) <= within))


def half_brier(probs: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per forecast: 0.5 sum_b (p_b - 1[b = y])^2, in [0, 1]."""
    return 0.5 * np.sum((probs - _onehot(truth)) ** 2, axis=1)


def ordinal_crps(probs: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per forecast: (1/7) sum_{k=1..7} (F(k) - 1[k >= y])^2, F the forecast's cumulative distribution."""
    cdf = np.cumsum(probs, axis=1)[:, : N_CLASSES - 1]
    step = (np.arange(1, N_CLASSES)[None, :] >= truth[:, None]).astype(float)
    return np.sum((cdf - step) ** 2, axis=1) / (N_CLASSES - 1)


def nll(probs: np.ndarray, truth: np.ndarray, floor: float = 1e-12) -> np.ndarray:
    return -np.log(np.maximum(probs[np.arange(len(truth)), truth - 1], floor))


def ece(probs: np.ndarray, truth: np.ndarray, buckets: int = 10) -> float:
    """Expected calibration error of the top class over equal-width confidence buckets."""
    conf = probs.max(1)
    right = (probs.argmax(1) + 1 == truth).astype(float)
    edges = np.linspace(0, 1, buckets + 1)
    index = np.clip(np.digitize(conf, edges[1:-1]), 0, buckets - 1)
    total = 0.0
    for b in range(buckets):
        mask = index == b
        if mask.any():
            total += mask.mean() * abs(right[mask].mean() - conf[mask].mean())
    return float(total)


def risk_coverage(probs: np.ndarray, truth: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Coverage i/n and the error rate among the i most confident forecasts, for i = 1..n."""
    conf = np.array([confidence(p, kind) for p in probs])
    order = np.argsort(-conf, kind="stable")
    wrong = (probs.argmax(1) + 1 != truth).astype(float)[order]
    counts = np.arange(1, len(truth) + 1)
    return counts / len(truth), np.cumsum(wrong) / counts


def aurc(probs: np.ndarray, truth: np.ndarray, kind: str) -> float:
    return float(np.mean(risk_coverage(probs, truth, kind)[1]))


def expected_speedup(probs: np.ndarray) -> np.ndarray:
    return np.exp(probs @ np.log(CLASS_SPEEDUP))


def speedup_recovered(probs: np.ndarray, speedups: np.ndarray, fraction: float) -> float:
    """The best true speedup among the top ``fraction`` of candidates ranked by expected class, over the best.

    Candidates tied at the cut are drawn at random: the value is its expectation, so a forecaster that ranks
    nothing (the same forecast for all) is not credited with the order the rows happen to be in."""
    k = max(1, int(np.ceil(fraction * len(speedups))))
    score = np.round(probs @ np.arange(1, N_CLASSES + 1), 10)
    cut = np.sort(score)[::-1][k - 1]
    above, tied = speedups[score > cut], np.sort(speedups[score == cut])[::-1]
    m, t = k - len(above), len(tied)
    best_above = above.max() if len(above) else 0.0
    # P(the best of m drawn from t is the j-th best of them) = C(t - j, m - 1) / C(t, m), j = 1..t
    expected = sum(math.comb(t - j, m - 1) / math.comb(t, m) * max(best_above, tied[j - 1])
                   for j in range(1, t - m + 2))
    return float(expected / speedups.max())


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation, ties given their mean rank (values equal to 10 decimals are ties: a matrix
    product can leave equal forecasts a rounding error apart)."""
    ra, rb = _ranks(np.round(a, 10)), _ranks(np.round(b, 10))
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x))
    for value in np.unique(x):
        tied = x == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def scores(probs: np.ndarray, truth: np.ndarray, speedups: np.ndarray) -> dict[str, float]:
    """Every score over one set of forecasts (lower is better for the losses, higher for the rest)."""
    if not len(truth):
        return {"n": 0}
    predicted = expected_speedup(probs)
    out = {"n": int(len(truth)), "accuracy": accuracy(probs, truth), "accuracy_within_1": accuracy(probs, truth, 1),
           "half_brier": float(half_brier(probs, truth).mean()), "crps": float(ordinal_crps(probs, truth).mean()),
           "nll": float(nll(probs, truth).mean()), "ece": ece(probs, truth),
           "mape_expected_speedup": float(np.mean(np.abs(predicted - speedups) / speedups)),
           "spearman": spearman(predicted, speedups)}
    for kind in CONFIDENCES:
        out[f"aurc_{kind}"] = aurc(probs, truth, kind)
    for fraction in TOP_FRACTIONS:
        out[f"recovered_top_{round(fraction * 100)}pct"] = speedup_recovered(probs, speedups, fraction)
    return out


def score_forecasts(forecasts: Sequence[Forecast], truth: Sequence[int], speedups: Sequence[float | None]
                    ) -> dict[str, object]:
    """Scores with parse failures read as uniform (``all``) and with them left out (``parsed``); failures of the
    candidates themselves (class 0) are left out of both and counted."""
    kept = [i for i, c in enumerate(truth) if c >= 1 and speedups[i]]
    probs = np.array([forecasts[i].probabilities for i in kept]).reshape(-1, N_CLASSES)
    y = np.array([truth[i] for i in kept], dtype=int)
    s = np.array([speedups[i] for i in kept], dtype=float)
    parsed = np.array([not forecasts[i].parse_failure for i in kept], dtype=bool)
    return {"candidates": len(truth), "failures_left_out": len(truth) - len(kept),
            "parse_failures": int((~parsed).sum()), "all": scores(probs, y, s),
            "parsed": scores(probs[parsed], y[parsed], s[parsed])}
