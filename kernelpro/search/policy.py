"""Search policies: which variant the optimisation graph expands next, and what a judgement teaches them.

The graph knows a policy only through ``SearchPolicy``. A policy keeps no state of its own between calls:
everything it learns goes into the tree (``visits``, ``value``), which the graph checkpoints, so a resumed run
continues where it stopped with a freshly built policy.
"""

from __future__ import annotations

import math
from collections.abc import Set as AbstractSet
from typing import Protocol, runtime_checkable

from kernelpro.search.tree import Variant, VariantTree


@runtime_checkable
class SearchPolicy(Protocol):
    """What the graph asks of a search policy.

    The graph's loop: ``select`` a variant, create children of it (LLM or recipes), judge each, and call
    ``observe`` once per judged (or failed) child.
    """

    name: str

    def select(self, tree: VariantTree, exclude: AbstractSet[str] = frozenset()) -> str | None:
        """The id of the variant to expand next, or None when nothing is worth expanding.

        ``exclude``: variants the graph found nothing more to try from (no recipe left, an empty plan).
        """
        ...

    def observe(self, tree: VariantTree, variant_id: str) -> None:
        """Update the tree's search statistics after ``variant_id`` got its verdict (or failed)."""
        ...


def baseline_speedup(variant: Variant) -> float | None:
    """The speedup a variant stands for when expanded: 1.0 for the reference, its own when correct."""
    return 1.0 if variant.kind == "reference" else variant.speedup


class BestFirst:
    """Always expand the fastest correct variant (or the reference) that is still worth expanding.

    Progressive widening: a node may have at most ``widening * (visits + 1) ** alpha`` children, and never more
    than ``max_children``, so the search deepens a good node before it fans out. Dead-end pruning: a node whose
    last ``dead_end_after`` judged children all failed or gained less than ``min_gain`` over it is not expanded
    again.

    ``value`` is the best speedup seen in a variant's subtree (0 when none is correct) and ``visits`` counts
    the verdicts below and at it.
    """

    name = "best_first"

    def __init__(self, max_children: int = 8, widening: float = 2.0, alpha: float = 0.5, dead_end_after: int = 3,
                 min_gain: float = 0.02) -> None:
        if max_children < 1 or dead_end_after < 1 or widening <= 0:
            raise ValueError("max_children and dead_end_after must be at least 1, widening positive")
        self.max_children = max_children
        self.widening = widening
        self.alpha = alpha
        self.dead_end_after = dead_end_after
        self.min_gain = min_gain

    def child_limit(self, variant: Variant) -> int:
        """How many children ``variant`` may have now."""
        return min(self.max_children, max(1, math.floor(self.widening * (variant.visits + 1) ** self.alpha)))

    def is_dead_end(self, tree: VariantTree, variant: Variant) -> bool:
        """The last ``dead_end_after`` judged children all failed or did not improve on ``variant``."""
        base = baseline_speedup(variant) or 0.0
        settled = [c for c in tree.children(variant.id) if c.status != "pending"]
        recent = settled[-self.dead_end_after:]
        if len(recent) < self.dead_end_after:
            return False
        return all(c.speedup is None or c.speedup < base * (1 + self.min_gain) for c in recent)

    def expandable(self, tree: VariantTree) -> list[Variant]:
        """Variants worth expanding, best first."""
        ranked = sorted((v for v in tree if baseline_speedup(v) is not None and not v.flagged),
                        key=lambda v: (-(baseline_speedup(v) or 0.0), v.depth))
        return [v for v in ranked if len(tree.children(v.id)) < self.child_limit(v)
                and not self.is_dead_end(tree, v)]

    def select(self, tree: VariantTree, exclude: AbstractSet[str] = frozenset()) -> str | None:
        candidates = [v for v in self.expandable(tree) if v.id not in exclude]
        return candidates[0].id if candidates else None

    def observe(self, tree: VariantTree, variant_id: str) -> None:
        reward = tree.get(variant_id).speedup or 0.0
        for variant in tree.path_to(variant_id):
            variant.visits += 1
            variant.value = max(variant.value, reward)
