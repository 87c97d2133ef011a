"""Rewards on log speedup, calibrated to the run's observed range (after KernelPro).

Speedups multiply along a path, so the search scores their logarithm: 2x and 0.5x are equally far from the
reference. The logarithm is then mapped onto [``CORRECT_FLOOR``, 1] over the range this run has seen so far
(the reference's 0 always included), so the exploration constant means the same on a problem where candidates
reach 1.2x as on one where they reach 20x. A variant without a verdict of correct earns 0: below every correct
one, however slow. The scale is recomputed from the tree at each proposal, so it never goes stale.

Under an energy objective (``search.objective``) the same holds for the energy (or EDP) ratio in place of the
speedup; a correct variant without energy readings earns ``CORRECT_FLOOR``, like the worst correct one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kernelpro.search.tree import Variant, VariantTree

CORRECT_FLOOR = 0.2
"""The reward of the slowest correct variant seen: correct code is worth more than any failure."""


@dataclass(frozen=True)
class RewardScale:
    low: float
    high: float
    objective: str = "time"

    @classmethod
    def of(cls, tree: VariantTree) -> RewardScale:
        ratios = (v.ratio(tree.figure) for v in tree if v.kind != "reference")
        logs = [0.0] + [math.log(r) for r in ratios if r]
        return cls(min(logs), max(logs), tree.figure)

    def __call__(self, variant: Variant) -> float:
        speedup = variant.ratio(self.objective)
        if speedup is None and variant.correct and not variant.flagged:  # correct, without energy readings
            return CORRECT_FLOOR
        if not speedup or variant.flagged:
            return 0.0
        if self.high - self.low < 1e-9:
            return 0.5 * (1 + CORRECT_FLOOR)
        where = (math.log(speedup) - self.low) / (self.high - self.low)
        return CORRECT_FLOOR + (1 - CORRECT_FLOOR) * min(1.0, max(0.0, where))


def subtree_values(tree: VariantTree, scale: RewardScale, best_weight: float) -> dict[str, float]:
    """Each variant's value: ``best_weight`` times the best reward in its subtree plus the rest times their
    mean, over settled variants. We search for the single best kernel, so the best matters most; the mean
    keeps a subtree whose one lucky child is surrounded by failures from looking as good as a reliable one."""
    rewards: dict[str, list[float]] = {v.id: [] for v in tree}
    for variant in tree:
        if variant.settled:
            reward = scale(variant)
            for node in tree.path_to(variant.id):
                rewards[node.id].append(reward)
    return {key: (best_weight * max(found) + (1 - best_weight) * sum(found) / len(found)) if found else 0.0
            for key, found in rewards.items()}
