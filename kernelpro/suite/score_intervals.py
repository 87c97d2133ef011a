"""How far a suite's scores could move with its measurements: an interval for the geometric-mean speedup and a
range for each fast_p, from the 95% intervals of the problems' own speedups.

Each problem's speedup carries its verdict's interval (the finalists' re-judgment for an improved problem; a
compile baseline's for the figure against compile, the two combined as independent measurements); a problem
that keeps its reference is at exactly 1. These say what the judge's noise allows with the problems taken as
they are, not how the scores would move over another draw of problems.

- geomean: the mean of the problems' log speedups, with the standard error each interval implies (its log
  width over 2 x 1.96) added in quadrature, as a 95% interval.
- fast_p: from the share of problems whose whole interval lies above p (surely faster by p) to the share whose
  interval reaches above it (possibly faster): every share the problems' intervals allow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kernelpro.harness.timing.stats import Z95, Measured


def geomean_interval(values: Sequence[Measured]) -> list[float] | None:
    """The 95% interval of the geometric mean of ``values``; None for none."""
    if not values:
        return None
    mean = sum(math.log(v.value) for v in values) / len(values)
    spread = Z95 * math.sqrt(sum(v.log_se ** 2 for v in values)) / len(values)
    return [math.exp(mean - spread), math.exp(mean + spread)]


def fast_p_range(values: Sequence[Measured | None], total: int, ps: Sequence[float]) -> dict[float, list[float]]:
    """p -> [the share of ``total`` surely above p, the share possibly above it]; None entries (incorrect
    problems) are never above."""
    if not total:
        return {p: [0.0, 0.0] for p in ps}
    return {p: [sum(1 for v in values if v is not None and v.low > p) / total,
                sum(1 for v in values if v is not None and v.high > p) / total] for p in ps}
