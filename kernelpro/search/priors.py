"""Priors of planned ideas: how promising each looks before it is tried, for PUCT and the report.

Three signals, each optional: the planner's ranking (its first idea is its best guess), its expected speedup,
and what the search memory says of the idea's techniques on related problems. They multiply into a weight, and
the weights of one plan are normalised to sum to 1, as PUCT's action probabilities do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from kernelpro.search.tree import Idea

SPEEDUP_WEIGHT = 1.0
"""Exponent on the (clamped) expected speedup: 2x expected doubles an idea's weight against 1x."""
MEMORY_WEIGHT = 1.0
"""Exponent base e on the memory's technique score in [-1, 1]: a technique that always worked weighs e times
more, one that always failed e times less."""
EXPECTED_RANGE = (0.5, 4.0)
"""Expected speedups are clamped to this range: a planner's 50x is a hope, not a measurement."""


def rank_priors(ideas: Sequence[Idea], technique_scores: Mapping[str, float] | None = None,
                base: Sequence[float] | None = None) -> list[Idea]:
    """The ideas with their priors set. ``base``: a weight per idea that replaces the ranking (recipes carry
    their own); otherwise the i-th idea of the plan weighs 1 / (i + 1)."""
    scores = technique_scores or {}
    weights = []
    for rank, idea in enumerate(ideas):
        weight = base[rank] if base is not None else 1.0 / (rank + 1)
        if idea.expected_speedup:
            low, high = EXPECTED_RANGE
            weight *= min(high, max(low, idea.expected_speedup)) ** SPEEDUP_WEIGHT
        known = [scores[t] for t in idea.techniques if t in scores]
        if known:
            weight *= math.exp(MEMORY_WEIGHT * sum(known) / len(known))
        weights.append(max(weight, 1e-6))
    total = sum(weights) or 1.0
    return [idea.model_copy(update={"prior": w / total}) for idea, w in zip(ideas, weights, strict=True)]
