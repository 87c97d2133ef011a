"""Policies that rank parents by their speedup (the objective's ratio): greedy best-first and beam (the built-in
recipes' policy, ``recipes.policy``, is greedy too)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelpro.search.policy import (
    Expansion,
    Rules,
    baseline_ratio,
    baseline_speedup,
    plan_requests,
    refresh_statistics,
    subtree_visits,
)
from kernelpro.search.tree import Variant, VariantTree

if TYPE_CHECKING:
    from kernelpro.config import SearchSettings


class Greedy:
    """Best-first: grow the fastest correct variant that can still grow, with its ideas in order of prior; when its
    ideas (or its widening allowance) run out within a batch, the next fastest fills the rest."""

    name = "greedy"

    def __init__(self, rules: Rules | None = None) -> None:
        self.rules = rules or Rules()

    @classmethod
    def from_settings(cls, settings: SearchSettings) -> Greedy:
        return cls(Rules.from_settings(settings))

    def ranked(self, tree: VariantTree) -> list[Variant]:
        visits = subtree_visits(tree)
        ranked = sorted((v for v in tree if baseline_speedup(v) is not None),
                        key=lambda v: (-(baseline_ratio(tree, v) or 0.0), v.depth))
        return [v for v in ranked if self.rules.can_grow(tree, v, visits[v.id])]

    def _from(self, tree: VariantTree, parent: Variant, room: int) -> list[Expansion]:
        """Up to ``room`` expansions of ``parent`` within its widening allowance."""
        allowance = self.rules.child_limit(subtree_visits(tree)[parent.id]) - len(tree.children(parent.id))
        if not parent.ideas:
            return [Expansion(parent.id, None)]
        return [Expansion(parent.id, idea, idea.prior) for idea in parent.ideas[:max(0, min(room, allowance))]]

    def propose(self, tree: VariantTree, budget: int) -> list[Expansion]:
        chosen: list[Expansion] = []
        for parent in self.ranked(tree):
            if len(chosen) >= budget:
                break
            found = self._from(tree, parent, budget - len(chosen))
            if any(e.idea is None for e in found):
                return plan_requests([*chosen, *found]) if not chosen else chosen
            chosen += found
        return chosen

    def observe(self, tree: VariantTree, variant_ids: list[str]) -> None:
        refresh_statistics(tree)


class Beam(Greedy):
    """The ``width`` fastest variants that can grow, ``ideas_each`` ideas from each (as KernelAgent does), taken
    round-robin so a batch smaller than the beam still spreads over it."""

    name = "beam"

    def __init__(self, rules: Rules | None = None, width: int = 2, ideas_each: int = 2) -> None:
        super().__init__(rules)
        if width < 1 or ideas_each < 1:
            raise ValueError("beam width and ideas per variant must be at least 1")
        self.width, self.ideas_each = width, ideas_each

    @classmethod
    def from_settings(cls, settings: SearchSettings) -> Beam:
        return cls(Rules.from_settings(settings), width=settings.beam_width, ideas_each=settings.beam_ideas)

    def propose(self, tree: VariantTree, budget: int) -> list[Expansion]:
        beam = self.ranked(tree)[: self.width]
        needs_plan = [Expansion(v.id, None) for v in beam if not v.ideas]
        if needs_plan:
            return needs_plan
        per_parent = [self._from(tree, v, self.ideas_each) for v in beam]
        chosen: list[Expansion] = []
        for rank in range(self.ideas_each):
            for found in per_parent:
                if rank < len(found) and len(chosen) < budget:
                    chosen.append(found[rank])
        return chosen
