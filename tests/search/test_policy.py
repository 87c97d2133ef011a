"""BestFirst: expands the best correct variant, widens progressively, prunes dead ends."""

from __future__ import annotations

import pytest

from kernelpro.harness.result import EvalResult
from kernelpro.search.policy import BestFirst, SearchPolicy
from kernelpro.search.tree import VariantTree
from tests.conftest import problem


def judged(tree: VariantTree, policy: BestFirst, parent: str, speedup: float | None, tag: str) -> str:
    """Add a child of ``parent`` with a verdict (correct at ``speedup``, or incorrect) and observe it."""
    child = tree.spawn(parent, f"class ModelNew: pass  # {tag}", tag, "llm")
    child.record(EvalResult(status="ok", correct=True, speedup=speedup) if speedup is not None
                 else EvalResult(status="incorrect", reason="mismatch"))
    policy.observe(tree, child.id)
    return child.id


def test_best_first_is_a_search_policy():
    assert isinstance(BestFirst(), SearchPolicy)


def test_starts_at_the_reference_then_follows_the_best():
    tree = VariantTree.with_root(problem("scale_relu").source)
    policy = BestFirst()
    root = tree.root.id
    assert policy.select(tree) == root
    judged(tree, policy, root, 1.3, "a")
    best = judged(tree, policy, root, 2.0, "b")
    assert policy.select(tree) == best
    better = judged(tree, policy, best, 3.0, "c")
    assert policy.select(tree) == better


def test_observe_updates_visits_and_values_up_the_path():
    tree = VariantTree.with_root(problem("scale_relu").source)
    policy = BestFirst()
    root = tree.root.id
    a = judged(tree, policy, root, 1.5, "a")
    b = judged(tree, policy, a, 2.5, "b")
    judged(tree, policy, a, None, "c")
    assert [tree.get(i).visits for i in (root, a, b)] == [3, 3, 1]
    assert [tree.get(i).value for i in (root, a, b)] == [2.5, 2.5, 2.5]


def test_progressive_widening_caps_children_then_widens_with_visits():
    policy = BestFirst(max_children=3, widening=1.0, alpha=0.5, dead_end_after=10)
    tree = VariantTree.with_root(problem("scale_relu").source)
    root = tree.root
    assert policy.child_limit(root) == 1
    tree.spawn(root.id, "class ModelNew: pass  # pending", "pending", "llm")
    assert policy.select(tree) is None  # one pending child fills the first slot
    root.visits = 3
    assert policy.child_limit(root) == 2 and policy.select(tree) == root.id
    root.visits = 100
    assert policy.child_limit(root) == 3


def test_dead_ends_are_not_expanded_again():
    tree = VariantTree.with_root(problem("scale_relu").source)
    policy = BestFirst(dead_end_after=2, min_gain=0.05)
    root = tree.root.id
    best = judged(tree, policy, root, 2.0, "best")
    other = judged(tree, policy, root, 1.5, "other")
    judged(tree, policy, best, None, "fails")
    assert policy.select(tree) == best  # one failure is not yet a dead end
    judged(tree, policy, best, 1.2, "slower")
    assert policy.is_dead_end(tree, tree.get(best))
    assert policy.select(tree) == other


def test_nothing_to_expand_gives_none():
    tree = VariantTree.with_root(problem("scale_relu").source)
    policy = BestFirst(dead_end_after=1)
    judged(tree, policy, tree.root.id, None, "broken")
    assert policy.select(tree) is None


def test_parameters_are_checked():
    with pytest.raises(ValueError):
        BestFirst(max_children=0)


def test_a_gain_below_min_gain_does_not_count_as_progress():
    tree = VariantTree.with_root(problem("scale_relu").source)
    policy = BestFirst(dead_end_after=1, min_gain=0.05)
    best = judged(tree, policy, tree.root.id, 2.0, "best")
    judged(tree, policy, best, 2.05, "marginal")
    assert policy.is_dead_end(tree, tree.get(best))
    judged(tree, policy, best, 2.2, "real gain")
    assert not policy.is_dead_end(tree, tree.get(best))
