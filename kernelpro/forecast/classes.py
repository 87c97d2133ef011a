"""The one definition of a speedup class, and a forecast over the classes.

class = clamp(floor(2 log2 S) + 4, 1, 8): boundaries at S = 0.5, 0.707, 1, 1.414, 2, 2.83, 4 (class 4 is
[1, 1.414)). Class 0 is a failure (incorrect, rejected, no speedup) and is never predicted: a forecast has eight
probabilities, for classes 1 to 8.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

N_CLASSES = 8
FAILURE = 0
BOUNDARIES = tuple(2.0 ** (k / 2) for k in range(-2, 5))  # 0.5, 0.707, 1, 1.414, 2, 2.83, 4
# A class's representative speedup: the geometric middle of its interval (the open ends a half-step out).
CLASS_SPEEDUP = tuple(2.0 ** ((c - 4) / 2 + 0.25) for c in range(1, N_CLASSES + 1))


def speedup_class(speedup: float | None) -> int:
    """The class of a measured speedup; 0 for no speedup (a failure) or a non-positive one."""
    if speedup is None or not math.isfinite(speedup) or speedup <= 0:
        return FAILURE
    return min(N_CLASSES, max(1, math.floor(2 * math.log2(speedup)) + 4))


def class_interval(cls: int) -> tuple[float, float]:
    """The speedups a class covers, [low, high)."""
    if not 1 <= cls <= N_CLASSES:
        raise ValueError(f"class {cls} is not one of 1..{N_CLASSES}")
    low = 0.0 if cls == 1 else BOUNDARIES[cls - 2]
    high = math.inf if cls == N_CLASSES else BOUNDARIES[cls - 1]
    return low, high


class Forecast(BaseModel):
    """Eight class probabilities (classes 1..8, summing to 1), what the forecaster said, and how it was read."""

    probabilities: list[float] = Field(min_length=N_CLASSES, max_length=N_CLASSES)
    predicted: int = Field(ge=1, le=N_CLASSES)
    """The class the forecaster named (may differ from the most probable one)."""
    reasoning: str = ""
    raw_sum: float = 1.0
    """The probabilities' sum as given, before renormalising."""
    parse_failure: bool = False
    """No usable probabilities came back: the forecast is uniform and says so."""
    deferred: bool = False
    """The forecaster declined and asked for a measurement."""
    forecaster: str = ""
    energy_ratio: float | None = Field(default=None, gt=0)
    """A predicted energy ratio (reference joules per call over the candidate's), when a forecaster gives one;
    the classes are of speed (``forecast.objective_reward`` reads both)."""

    @property
    def array(self) -> np.ndarray:
        return np.asarray(self.probabilities, dtype=float)

    @property
    def expected_class(self) -> float:
        return float(np.dot(self.array, np.arange(1, N_CLASSES + 1)))

    @property
    def expected_speedup(self) -> float:
        """Geometric expectation over the classes' representative speedups."""
        return float(np.exp(np.dot(self.array, np.log(CLASS_SPEEDUP))))

    def confidence(self, kind: str = "max_prob") -> float:
        return confidence(self.array, kind)


def from_probabilities(raw: Sequence[float], predicted: int | None = None, reasoning: str = "",
                       forecaster: str = "", deferred: bool = False) -> Forecast:
    """Renormalise what a forecaster gave (negatives and non-numbers count as 0), keeping the raw sum; a sum of
    zero, or the wrong number of values, is a parse failure and reads as uniform."""
    values = [float(v) if isinstance(v, int | float) and math.isfinite(v) and v > 0 else 0.0 for v in raw]
    total = float(sum(values))
    if len(values) != N_CLASSES or total <= 0:
        return uniform(reasoning, forecaster, raw_sum=total, deferred=deferred)
    probs = [v / total for v in values]
    best = int(np.argmax(probs)) + 1
    named = predicted if isinstance(predicted, int) and 1 <= predicted <= N_CLASSES else best
    return Forecast(probabilities=probs, predicted=named, reasoning=reasoning, raw_sum=total,
                    forecaster=forecaster, deferred=deferred)


def uniform(reasoning: str = "", forecaster: str = "", raw_sum: float = 0.0, deferred: bool = False) -> Forecast:
    """The forecast of a parse failure (or a deferral): every class equally likely."""
    return Forecast(probabilities=[1.0 / N_CLASSES] * N_CLASSES, predicted=4, reasoning=reasoning, raw_sum=raw_sum,
                    parse_failure=not deferred, deferred=deferred, forecaster=forecaster)


CONFIDENCES = ("max_prob", "neg_entropy", "margin")


def confidence(probs: np.ndarray, kind: str = "max_prob") -> float:
    """How sure a forecast is: its largest probability, its negative entropy, or the gap between its top two."""
    p = np.asarray(probs, dtype=float)
    if kind == "max_prob":
        return float(p.max())
    if kind == "neg_entropy":
        nz = p[p > 0]
        return float(np.sum(nz * np.log(nz)))
    if kind == "margin":
        top = np.sort(p)[::-1]
        return float(top[0] - top[1])
    raise ValueError(f"unknown confidence {kind!r}; one of {', '.join(CONFIDENCES)}")
