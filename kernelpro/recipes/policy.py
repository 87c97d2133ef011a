"""The ``recipes`` search policy: greedy over the built-in recipes, the reference's own recipes first."""

from __future__ import annotations

from kernelpro.search.greedy import Greedy
from kernelpro.search.policy import Expansion
from kernelpro.search.tree import Variant, VariantTree


def reference_open(tree: VariantTree) -> bool:
    """The root still has recipes to try: some are queued, or it is yet to be planned."""
    root = tree.root
    return not root.exhausted and (bool(root.ideas) or root.plans == 0)


class Recipes(Greedy):
    """Greedy over the built-in recipes (no language model): the loop plans recipes instead of asking a model.

    The reference's own recipes come before any composition on a variant that did not win: while the root has
    recipes left to try (or is yet to be planned), only the root and the variants that improve on the reference
    (``Variant.improves_under`` the objective) are grown, and the root whatever its widening allowance, child
    limit or dead-end count, since its recipes are a short fixed list, each another way to win. A variant that
    measured slower, or not measurably faster, is composed upon only once the root's recipes are spent."""

    name = "recipes"

    def ranked(self, tree: VariantTree) -> list[Variant]:
        if not reference_open(tree):
            return super().ranked(tree)
        winners = [v for v in super().ranked(tree) if v.kind != "reference" and tree.improves(v)]
        return [*winners, tree.root]

    def _from(self, tree: VariantTree, parent: Variant, room: int) -> list[Expansion]:
        if parent.kind != "reference" or not reference_open(tree):
            return super()._from(tree, parent, room)
        if not parent.ideas:
            return [Expansion(parent.id, None)]
        return [Expansion(parent.id, idea, idea.prior) for idea in parent.ideas[:room]]
