"""What the optimisation loop asks of a search policy, and the rules every policy shares.

A policy proposes a batch of ``Expansion``s: which variant to grow and with which of its planned ideas. When a
variant worth growing has no idea queued, the proposal is ``Expansion(parent, None)``: the loop asks the planner
(or the recipes) for that variant's ideas, queues them on it with their priors (``VariantTree.add_ideas``) and
asks the policy again. A policy keeps no state of its own between calls: everything it needs is in the tree,
which the graph checkpoints, so a resumed run continues with a freshly built policy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kernelpro.search.tree import Idea, Variant, VariantTree

if TYPE_CHECKING:
    from kernelpro.config import SearchSettings


@dataclass(frozen=True)
class Expansion:
    """Grow ``parent_id`` with ``idea`` (None: plan ideas for it first); ``prior`` is how promising it looked."""

    parent_id: str
    idea: Idea | None
    prior: float = 0.0


@runtime_checkable
class SearchPolicy(Protocol):
    name: str

    def propose(self, tree: VariantTree, budget: int) -> list[Expansion]:
        """At most ``budget`` expansions to write and judge together; empty when nothing is worth trying.
        Either every expansion has an idea, or every one asks for a plan (``idea`` None)."""
        ...

    def observe(self, tree: VariantTree, variant_ids: list[str]) -> None:
        """After a batch's verdicts: refresh the tree's ``visits``/``value`` shown in the report."""
        ...


def baseline_speedup(variant: Variant) -> float | None:
    """The speedup a variant stands for when expanded: 1.0 for the reference, its own when correct."""
    return 1.0 if variant.kind == "reference" else variant.speedup


def baseline_ratio(tree: VariantTree, variant: Variant) -> float | None:
    """What a variant stands for under the tree's deciding figure (``VariantTree.figure``): its speedup for time, its
    energy or EDP ratio otherwise (None for a correct variant without energy readings)."""
    return variant.ratio(tree.figure)


@dataclass(frozen=True)
class Rules:
    """What every policy respects when it grows a variant.

    Progressive widening: a variant may have at most ``widening * (visits + 1) ** alpha`` children (visits: the
    verdicts in its subtree), never more than ``max_children``, so a search deepens a good variant before it fans
    out. Dead-end pruning: a variant whose last ``dead_end_after`` settled children all failed or gained less than
    ``min_gain`` over it is not grown again. Planning: a variant whose queue ran dry is planned again at most
    ``max_plans`` times in all (the planner sees what its children did); a plan with nothing new exhausts it.
    """

    max_children: int = 8
    widening: float = 2.0
    alpha: float = 0.5
    dead_end_after: int = 3
    min_gain: float = 0.02
    max_plans: int = 3

    @classmethod
    def from_settings(cls, settings: SearchSettings) -> Rules:
        return cls(max_children=settings.max_children, widening=settings.widening, alpha=settings.alpha,
                   dead_end_after=settings.dead_end_after, min_gain=settings.min_gain, max_plans=settings.max_plans)

    def __post_init__(self) -> None:
        if self.max_children < 1 or self.dead_end_after < 1 or self.widening <= 0 or self.max_plans < 1:
            raise ValueError("max_children, dead_end_after and max_plans must be at least 1, widening positive")

    def child_limit(self, visits: int, boost: float = 1.0) -> int:
        """How many children a variant with ``visits`` verdicts below it may have; ``boost`` widens promising
        ones (MCTS's asymmetric branching)."""
        return min(self.max_children, max(1, math.floor(self.widening * boost * (visits + 1) ** self.alpha)))

    def is_dead_end(self, tree: VariantTree, variant: Variant) -> bool:
        """Its last ``dead_end_after`` settled children, each with everything grown from it, all failed or gained
        less than ``min_gain`` over it. A child counts by the best of its subtree: a first rewrite that is
        slower than its parent and that its own children then made faster is progress (first custom kernels
        usually start below the reference; ``benchmarks/search_world.py``)."""
        base = baseline_ratio(tree, variant) or 0.0
        settled = [c for c in tree.children(variant.id) if c.settled]
        recent = settled[-self.dead_end_after:]
        if len(recent) < self.dead_end_after:
            return False
        return all(_subtree_best(tree, c) < base * (1 + self.min_gain) for c in recent)

    def can_grow(self, tree: VariantTree, variant: Variant, visits: int, boost: float = 1.0,
                 extra_children: int = 0) -> bool:
        """Correct, not flagged, not exhausted, under its child limit, not a dead end, with ideas or plans left."""
        if baseline_speedup(variant) is None or variant.flagged or variant.exhausted:
            return False
        if len(tree.children(variant.id)) + extra_children >= self.child_limit(visits, boost):
            return False
        if not variant.ideas and variant.plans >= self.max_plans:
            return False
        return not self.is_dead_end(tree, variant)


def _subtree_best(tree: VariantTree, variant: Variant) -> float:
    """The best ratio under the objective at or below ``variant`` (0 when nothing there is correct)."""
    best = variant.ratio(tree.figure) or 0.0
    for child in tree.children(variant.id):
        best = max(best, _subtree_best(tree, child))
    return best


def subtree_visits(tree: VariantTree) -> dict[str, int]:
    """Settled variants at and below each variant (the reference counts as its own visit)."""
    visits = {v.id: 0 for v in tree}
    for variant in tree:
        if variant.settled:
            for node in tree.path_to(variant.id):
                visits[node.id] += 1
    return visits


def plan_requests(expansions: list[Expansion]) -> list[Expansion]:
    """The proposals that need a plan first, one per parent; when there are any, they are the whole proposal."""
    seen: dict[str, Expansion] = {}
    for expansion in expansions:
        if expansion.idea is None and expansion.parent_id not in seen:
            seen[expansion.parent_id] = expansion
    return list(seen.values())


def refresh_statistics(tree: VariantTree) -> None:
    """``visits`` (verdicts at and below) and ``value`` (the best speedup, or the objective's ratio, in the
    subtree, 0 when none)."""
    visits = subtree_visits(tree)
    for variant in tree:
        variant.visits = visits[variant.id]
        variant.value = 0.0
    for variant in tree:
        reward = variant.ratio(tree.figure) or 0.0 if variant.kind != "reference" else 0.0
        for node in tree.path_to(variant.id):
            node.value = max(node.value, reward)
