"""The candidate's energy against the reference's: a ratio with its interval, and the call it supports.

Energy readings are few (each runs a second or more, see ``harness.energy``), so the interval is not a
bootstrap: the readings are paired (reading ``i`` of each model was taken back to back, in alternating order)
and the interval is Student's t over the logs of the paired ratios, whose mean is the geometric-mean ratio.
Ratios are reference over candidate, like the speedup: 1.12 means the candidate uses 12 % less energy per
call (``energy_ratio``), or has a 12 % smaller energy-delay product (``edp_ratio``: joules per call times
seconds per call, both from the same reading).

A reading repeats one input set, so a candidate that memoises on contents would use almost no energy there;
timed calls, on fresh inputs, would not have shown it. Each model's time per call during its readings is
therefore compared with its timed median: when the candidate ran more than ``REPLAY_FACTOR`` times faster
against the reference in the readings than in timing, the energy figures are not trusted (``uncertain``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernelpro.harness.timing import stats
from kernelpro.harness.timing.energy import EnergyReading

REPLAY_FACTOR = 2.0

# two-sided 97.5 % quantiles of Student's t by degrees of freedom (1-10); beyond, the normal's
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}

WORDS = {"faster": "less", "slower": "more", "same": "same", "uncertain": "uncertain"}
"""The speed call's words for energy: ``less`` energy than the reference, ``more``, the ``same``."""


@dataclass(frozen=True)
class RatioInterval:
    ratio: float
    low: float
    high: float
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        return {"ratio": round(self.ratio, 6), "ci95": [round(self.low, 6), round(self.high, 6)],
                "verdict": self.verdict}


def paired_ratio(reference: Sequence[float], candidate: Sequence[float], min_effect: float) -> RatioInterval:
    """The geometric-mean ratio reference/candidate of paired values, its 95% t interval and the call."""
    logs = [math.log(r / c) for r, c in zip(reference, candidate, strict=False) if r > 0 and c > 0]
    if not logs:
        raise ValueError("no paired energy readings to compare")
    mean = statistics.fmean(logs)
    if len(logs) == 1:
        low = high = mean
        verdict = "uncertain"
    else:
        half = _T975.get(len(logs) - 1, 1.96) * statistics.stdev(logs) / math.sqrt(len(logs))
        low, high = mean - half, mean + half
        verdict = stats.speed_call(math.exp(mean), math.exp(low), math.exp(high), min_effect)
    return RatioInterval(math.exp(mean), math.exp(low), math.exp(high), WORDS[verdict])


@dataclass(frozen=True)
class EnergyComparison:
    energy: RatioInterval
    edp: RatioInterval
    replayed: bool
    """The candidate ran far faster in its readings than in timing (a memo on one input set): not trusted."""
    capped: bool
    """Some reading ran while the card was power- or thermally capped."""

    def as_dict(self) -> dict[str, Any]:
        return {"energy": self.energy.as_dict(), "edp": self.edp.as_dict(), "replayed": self.replayed,
                "capped": self.capped}


def compare(readings: dict[str, list[EnergyReading]], timed_ms: dict[str, float], min_effect: float
            ) -> EnergyComparison:
    """Reference against candidate from ``paired_readings``' output and each model's timed median."""
    ref, cand = readings["reference"], readings["candidate"]
    energy = paired_ratio([r.joules_per_call for r in ref], [c.joules_per_call for c in cand], min_effect)
    edp = paired_ratio([r.joules_per_call * r.seconds_per_call for r in ref],
                       [c.joules_per_call * c.seconds_per_call for c in cand], min_effect)
    loop_speedup = statistics.median(r.seconds_per_call for r in ref) / \
        statistics.median(c.seconds_per_call for c in cand)
    timed_speedup = timed_ms["reference"] / timed_ms["candidate"] if timed_ms["candidate"] > 0 else 1.0
    replayed = loop_speedup > REPLAY_FACTOR * timed_speedup
    if replayed:
        energy = RatioInterval(energy.ratio, energy.low, energy.high, "uncertain")
        edp = RatioInterval(edp.ratio, edp.low, edp.high, "uncertain")
    capped = any(r.capped for r in ref + cand)
    return EnergyComparison(energy, edp, replayed, capped)
