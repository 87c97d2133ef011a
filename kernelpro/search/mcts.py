"""Monte Carlo tree search over variants, after KernelPro, with batches of expansions.

Each proposal descends from the reference by PUCT: at a variant with ``N`` verdicts below it, a settled child
``c`` scores ``Q(c) + c_puct * P(c) * sqrt(N + 1) / (1 + N(c))`` and growing a new child with the variant's best
untried idea scores ``R(v) - fpu + c_puct * P(idea) * sqrt(N + 1)``. ``Q`` is the calibrated log-speedup value
of the subtree (``rewards``), ``R(v)`` the variant's own reward on that scale, ``P`` the idea's prior
(``priors``: the planner's ranking and expected speedup, and the search memory's lessons on its techniques).
The descent stops where the new child wins; that is one expansion. Choices, each with its setting in ``SearchSettings``:

- progressive widening (``widening``, ``alpha``): at most ``widening * (N + 1) ** alpha`` children, so a node
  is deepened before it fans out;
- asymmetric branching (``branching``): that allowance is multiplied by ``1 + branching * Q``, so a subtree
  that pays gets more children than one that does not;
- dead-end pruning (``dead_end_after``, ``min_gain``): a variant whose last children all failed or gained
  nothing, each counted with its subtree, is not grown again, and a subtree with nothing left to grow is not
  descended into;
- virtual loss (``virtual_loss``): each expansion chosen for the batch counts as a lost visit on its path, so
  the next descent of the same batch goes elsewhere unless that path is clearly best; the same idea is never
  proposed twice;
- first-play urgency (``fpu``): a new child starts at its parent's own reward less ``fpu`` (not the parent's
  subtree value, which holds its best descendant's), so known good children are preferred unless the new idea's
  prior is strong.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

from kernelpro.search.policy import Expansion, Rules, plan_requests, refresh_statistics, subtree_visits
from kernelpro.search.rewards import RewardScale, subtree_values
from kernelpro.search.tree import Idea, Variant, VariantTree

if TYPE_CHECKING:
    from kernelpro.config import SearchSettings


class MCTS:
    name = "mcts"

    def __init__(self, rules: Rules | None = None, c_puct: float = 0.5, best_weight: float = 0.7,
                 branching: float = 1.0, virtual_loss: float = 1.0, fpu: float = 0.1,
                 plan_prior: float = 0.5) -> None:
        if c_puct < 0 or not 0 <= best_weight <= 1 or branching < 0 or virtual_loss < 0:
            raise ValueError("c_puct, branching and virtual_loss must be non-negative, best_weight in [0, 1]")
        self.rules = rules or Rules()
        self.c_puct, self.best_weight, self.branching = c_puct, best_weight, branching
        self.virtual_loss, self.fpu, self.plan_prior = virtual_loss, fpu, plan_prior

    @classmethod
    def from_settings(cls, settings: SearchSettings) -> MCTS:
        return cls(Rules.from_settings(settings), c_puct=settings.c_puct, best_weight=settings.best_weight,
                   branching=settings.branching, virtual_loss=settings.virtual_loss, fpu=settings.fpu,
                   plan_prior=settings.plan_prior)

    def propose(self, tree: VariantTree, budget: int) -> list[Expansion]:
        batch = _Batch(tree, self)
        chosen: list[Expansion] = []
        for _ in range(budget):
            expansion = batch.descend()
            if expansion is None:
                break
            chosen.append(expansion)
            batch.take(expansion)
        return plan_requests(chosen) or chosen

    def observe(self, tree: VariantTree, variant_ids: list[str]) -> None:
        refresh_statistics(tree)


class _Batch:
    """One proposal's bookkeeping: the tree's statistics and what this batch already took."""

    def __init__(self, tree: VariantTree, policy: MCTS) -> None:
        self.tree, self.policy, self.rules = tree, policy, policy.rules
        self.visits = subtree_visits(tree)
        scale = RewardScale.of(tree)
        self.values = subtree_values(tree, scale, policy.best_weight)
        self.own = {v.id: scale(v) for v in tree}
        self.virtual: Counter[str] = Counter()
        self.extra: Counter[str] = Counter()  # children this batch adds to each variant
        self.taken: set[tuple[str, str]] = set()  # (parent, idea) pairs already proposed
        self.planning: set[str] = set()

    def take(self, expansion: Expansion) -> None:
        for node in self.tree.path_to(expansion.parent_id):
            self.virtual[node.id] += 1
        self.extra[expansion.parent_id] += 1
        if expansion.idea is None:
            self.planning.add(expansion.parent_id)
        else:
            self.taken.add((expansion.parent_id, expansion.idea.description))

    def _prior(self, parent: Variant, prior: float) -> float:
        """A prior as a share of everything planned at ``parent`` (its children's and its untried ideas'), so a
        late plan's ideas do not outweigh the children of an earlier one."""
        total = sum(c.prior for c in self.tree.children(parent.id)) + sum(i.prior for i in parent.ideas)
        return prior / total if total > 1.0 else prior

    def _q(self, variant: Variant) -> float:
        """The value with this batch's virtual losses counted as visits that earned nothing."""
        n = self.visits[variant.id]
        loss = self.policy.virtual_loss * self.virtual[variant.id]
        return self.values[variant.id] * n / (n + loss) if n + loss > 0 else 0.0

    def _first_play(self, variant: Variant) -> float:
        """What a new child of ``variant`` is expected to earn before it is tried: the variant's own reward less
        ``fpu``. Not its subtree's value: that holds its best descendant's reward (``best_weight``), and a new
        child is one step from the variant, not from that descendant; starting it there made every ancestor of a
        good variant widen as eagerly as the good variant deepened."""
        n = self.visits[variant.id]
        loss = self.policy.virtual_loss * self.virtual[variant.id]
        shrink = n / (n + loss) if n + loss > 0 else 0.0
        return self.own[variant.id] * shrink - self.policy.fpu

    def _new_child(self, variant: Variant) -> tuple[Idea | None, float] | None:
        """The idea a new child of ``variant`` would try and its prior; None when it cannot grow now."""
        if variant.id in self.planning:
            return None
        boost = 1.0 + self.policy.branching * self.values[variant.id]
        if not self.rules.can_grow(self.tree, variant, self.visits[variant.id], boost, self.extra[variant.id]):
            return None
        free = [i for i in variant.ideas if (variant.id, i.description) not in self.taken]
        if free:
            return free[0], free[0].prior
        return (None, self.policy.plan_prior) if not variant.ideas else None

    def _open(self, variant: Variant, memo: dict[str, bool]) -> bool:
        """Whether anything at or below ``variant`` can grow in this batch."""
        if variant.id not in memo:
            memo[variant.id] = self._new_child(variant) is not None or any(
                self._open(child, memo) for child in self.tree.children(variant.id) if child.settled)
        return memo[variant.id]

    def descend(self) -> Expansion | None:
        memo: dict[str, bool] = {}
        node = self.tree.root
        if not self._open(node, memo):
            return None
        while True:
            explore = self.policy.c_puct * math.sqrt(self.visits[node.id] + self.virtual[node.id] + 1)
            best: tuple[float, Variant | None, tuple[Idea | None, float] | None] = (-math.inf, None, None)
            grow = self._new_child(node)
            if grow is not None:
                best = (self._first_play(node) + explore * self._prior(node, grow[1]), None, grow)
            for child in self.tree.children(node.id):
                if child.settled and self._open(child, memo):
                    n = self.visits[child.id] + self.virtual[child.id]
                    score = self._q(child) + explore * self._prior(node, child.prior) / (1 + n)
                    if score > best[0]:
                        best = (score, child, None)
            if best[2] is not None:
                idea, prior = best[2]
                return Expansion(node.id, idea, prior)
            if best[1] is None:
                return None
            node = best[1]
