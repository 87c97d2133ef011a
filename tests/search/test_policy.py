"""The search policies through the tree's lifecycle API: proposals, plan requests, widening, dead ends."""

from __future__ import annotations

import pytest

from kernelpro.config import SearchSettings
from kernelpro.harness.result import EvalResult
from kernelpro.search.greedy import Beam, Greedy
from kernelpro.search.mcts import MCTS
from kernelpro.search.policies import build_policy, resolve_policy_name
from kernelpro.search.policy import Rules, SearchPolicy
from kernelpro.search.priors import rank_priors
from kernelpro.search.rewards import CORRECT_FLOOR, RewardScale
from kernelpro.search.tree import Idea, VariantTree
from tests.conftest import problem


def ideas(*titles: str, priors: list[float] | None = None) -> list[Idea]:
    planned = [Idea(title=t, description=f"{t}, in one kernel") for t in titles]
    return rank_priors(planned, base=priors)


def judged(tree: VariantTree, parent: str, speedup: float | None, tag: str) -> str:
    """A child of ``parent`` born through the lifecycle API, with a verdict (correct at ``speedup``, or not)."""
    child = tree.spawn(parent, "", tag, "llm")
    tree.write_code(child.id, f"class ModelNew: pass  # {tag}")
    tree.record(child.id, EvalResult(status="ok", correct=True, speedup=speedup) if speedup is not None
                else EvalResult(status="incorrect", reason="mismatch"))
    return child.id


def fresh_tree() -> VariantTree:
    return VariantTree.with_root(problem("scale_relu").source)


@pytest.mark.parametrize("name", ["greedy", "beam", "mcts", "recipes"])
def test_every_policy_is_built_by_name_and_is_a_search_policy(name):
    policy = build_policy(name, SearchSettings())
    assert isinstance(policy, SearchPolicy) and policy.name == name


def test_auto_is_mcts_with_a_model_and_recipes_without_and_unknown_names_are_refused():
    assert resolve_policy_name("auto", uses_llm=True) == "mcts"
    assert resolve_policy_name("auto", uses_llm=False) == "recipes"
    with pytest.raises(ValueError, match="unknown search policy 'best'"):
        resolve_policy_name("best", uses_llm=True)


@pytest.mark.parametrize("policy", [Greedy(), Beam(), MCTS()])
def test_an_unplanned_reference_asks_for_a_plan_first(policy):
    tree = fresh_tree()
    (request,) = policy.propose(tree, 4)
    assert request.parent_id == tree.root.id and request.idea is None


def test_greedy_takes_the_best_variants_ideas_in_order_within_its_widening_allowance():
    tree = fresh_tree()
    tree.add_ideas(tree.root.id, ideas("a", "b", "c"))
    proposed = Greedy().propose(tree, 4)
    # one verdict (the reference's) allows floor(2 * sqrt(2)) = 2 children
    assert [e.idea.title for e in proposed] == ["a", "b"]
    assert proposed[0].prior > proposed[1].prior


def test_greedy_follows_the_fastest_variant():
    tree = fresh_tree()
    root = tree.root.id
    judged(tree, root, 1.3, "slow")
    fast = judged(tree, root, 2.0, "fast")
    tree.add_ideas(fast, ideas("x"))
    (expansion,) = Greedy().propose(tree, 1)
    assert expansion.parent_id == fast and expansion.idea.title == "x"


def test_spawning_an_idea_takes_it_off_the_queue_and_an_empty_plan_exhausts_the_variant():
    tree = fresh_tree()
    root = tree.root.id
    (first, second) = tree.add_ideas(root, ideas("a", "b"))
    child = tree.spawn_from(root, first, iteration=1)
    assert child.status == "pending" and child.prior == first.prior and tree.get(root).ideas == [second]
    assert tree.pending() == [child]
    assert tree.add_ideas(root, ideas("a")) == []  # already tried: nothing new
    assert tree.get(root).exhausted and Greedy().propose(tree, 2) == []


def test_a_dead_end_is_not_grown_again():
    tree = fresh_tree()
    root = tree.root.id
    good = judged(tree, root, 2.0, "good")
    for tag in ("x", "y", "z"):
        judged(tree, good, None, tag)
    rules = Rules(max_children=10, widening=10)
    assert rules.is_dead_end(tree, tree.get(good))
    tree.add_ideas(good, ideas("more"))
    tree.add_ideas(root, ideas("other"))
    for policy in (Greedy(rules), MCTS(rules)):
        assert {e.parent_id for e in policy.propose(tree, 2)} == {root}


def test_a_slow_child_that_its_own_children_made_faster_is_progress_not_a_dead_end():
    tree = fresh_tree()
    root = tree.root.id
    good = judged(tree, root, 2.0, "good")
    rewrite = judged(tree, good, 1.5, "a slower rewrite")
    judged(tree, good, None, "broken")
    judged(tree, good, 1.9, "no gain")
    rules = Rules(max_children=10, widening=10)
    assert rules.is_dead_end(tree, tree.get(good))
    judged(tree, rewrite, 3.0, "the rewrite tuned")
    assert not rules.is_dead_end(tree, tree.get(good))


def test_beam_spreads_a_batch_over_its_width():
    tree = fresh_tree()
    root = tree.root.id
    a, b = judged(tree, root, 2.0, "a"), judged(tree, root, 1.8, "b")
    judged(tree, root, 1.1, "c")
    tree.add_ideas(a, ideas("a1", "a2"))
    tree.add_ideas(b, ideas("b1", "b2"))
    proposed = Beam(width=2, ideas_each=2).propose(tree, 4)
    assert [(e.parent_id, e.idea.title) for e in proposed] == [(a, "a1"), (b, "b1"), (a, "a2"), (b, "b2")]


def test_mcts_follows_priors_and_never_proposes_one_idea_twice_in_a_batch():
    tree = fresh_tree()
    tree.add_ideas(tree.root.id, ideas("likely", "unlikely", priors=[0.9, 0.1]))
    proposed = MCTS(Rules(widening=4)).propose(tree, 3)
    assert [e.idea.title for e in proposed] == ["likely", "unlikely"]  # two ideas: no third proposal


def test_mcts_virtual_loss_spreads_a_batch_over_good_subtrees():
    tree = fresh_tree()
    root = tree.root.id
    a, b = judged(tree, root, 2.0, "a"), judged(tree, root, 1.9, "b")
    tree.get(root).exhausted = True
    tree.add_ideas(a, ideas("a1", "a2", "a3"))
    tree.add_ideas(b, ideas("b1", "b2", "b3"))
    parents = [e.parent_id for e in MCTS(virtual_loss=1.0).propose(tree, 2)]
    assert sorted(parents) == sorted([a, b])
    assert [e.parent_id for e in MCTS(virtual_loss=0.0).propose(tree, 2)] == [a, a]


def test_mcts_descends_into_a_paying_subtree_rather_than_widening_a_poor_one():
    tree = fresh_tree()
    root = tree.root.id
    good_idea, broken_idea, _ = tree.add_ideas(root, ideas("good", "broken", "other"))
    good, broken = tree.spawn_from(root, good_idea), tree.spawn_from(root, broken_idea)
    for child, source in ((good, "# good"), (broken, "# broken")):
        tree.write_code(child.id, f"class ModelNew: pass  {source}")
    tree.record(good.id, EvalResult(status="ok", correct=True, speedup=3.0))
    tree.record(broken.id, EvalResult(status="incorrect", reason="mismatch"))
    tree.add_ideas(good.id, ideas("deeper"))
    (expansion,) = MCTS().propose(tree, 1)
    assert expansion.parent_id == good.id and expansion.idea.title == "deeper"


def test_mcts_first_play_starts_from_the_variants_own_reward_not_its_best_descendants():
    tree = fresh_tree()
    root = tree.root.id
    slow_idea, _ = tree.add_ideas(root, ideas("slow", "other", priors=[0.5, 0.5]))
    slow = tree.spawn_from(root, slow_idea)
    tree.write_code(slow.id, "class ModelNew: pass  # slow")
    tree.record(slow.id, EvalResult(status="ok", correct=True, speedup=0.5))
    (fast_idea,) = tree.add_ideas(slow.id, ideas("fast"))
    fast = tree.spawn_from(slow.id, fast_idea)
    tree.write_code(fast.id, "class ModelNew: pass  # fast")
    tree.record(fast.id, EvalResult(status="ok", correct=True, speedup=4.0))
    tree.add_ideas(fast.id, ideas("deeper"))
    # the reference is worth its own 1x, not its grandchild's 4x: a new child of it is one step from 1x
    (expansion,) = MCTS().propose(tree, 1)
    assert (expansion.parent_id, expansion.idea.title) == (fast.id, "deeper")


def test_rewards_are_log_speedups_calibrated_to_the_observed_range():
    tree = fresh_tree()
    root = tree.root.id
    fast, slow, broken = judged(tree, root, 4.0, "fast"), judged(tree, root, 0.5, "slow"), judged(tree, root, None, "x")
    scale = RewardScale.of(tree)
    assert scale(tree.get(fast)) == pytest.approx(1.0) and scale(tree.get(slow)) == pytest.approx(CORRECT_FLOOR)
    assert scale(tree.get(broken)) == 0.0
    # the reference sits where log(1) falls between log(0.5) and log(4): a third of the way up
    assert scale(tree.root) == pytest.approx(CORRECT_FLOOR + (1 - CORRECT_FLOOR) / 3)


def test_priors_weigh_rank_expected_speedup_and_the_memorys_technique_scores():
    planned = [Idea(title="a", description="a", techniques=["fusion"]),
               Idea(title="b", description="b", expected_speedup=3.0, techniques=["tiling"])]
    plain = rank_priors(planned)
    assert plain[0].prior < plain[1].prior and sum(i.prior for i in plain) == pytest.approx(1.0)
    remembered = rank_priors(planned, {"fusion": 1.0, "tiling": -1.0})
    assert remembered[0].prior > remembered[1].prior


def test_parameters_are_checked():
    with pytest.raises(ValueError):
        Rules(max_children=0)
    with pytest.raises(ValueError):
        MCTS(best_weight=2.0)
    with pytest.raises(ValueError):
        Beam(width=0)


def recipes_tree() -> tuple[VariantTree, list[Idea]]:
    """scale_relu's reference with its CPU recipes planned, as the loop queues them."""
    from kernelpro.recipes.catalogue import recipe_expansions

    tree = fresh_tree()
    found = recipe_expansions(tree, tree.root.id, "cpu")
    planned = [Idea(title=r.name, description=r.idea, origin=r.origin, source=r.source) for r in found]
    tree.add_ideas(tree.root.id, rank_priors(planned, base=[r.prior for r in found]))
    return tree, list(tree.root.ideas)


def try_recipe(tree: VariantTree, idea: Idea, speedup: float) -> str:
    """The root's recipe ``idea`` spawned and judged at ``speedup`` on a quiet machine."""
    child = tree.spawn_from(tree.root.id, idea)
    verdict = "faster" if speedup > 1.05 else "slower" if speedup < 0.95 else "same"
    tree.record(child.id, EvalResult(status="ok", correct=True, speedup=speedup,
                                     speedup_ci95=[speedup * 0.97, speedup * 1.03], speed_verdict=verdict))
    return child.id


def test_the_recipes_policy_tries_the_references_recipes_before_composing_on_a_loser(monkeypatch):
    """Four of scale_relu's seven CPU recipes judged slower: the root is then at its widening allowance and a dead
    end by the rules' count, yet its three untried recipes come before any composition on a slower variant."""
    monkeypatch.setattr("kernelpro.recipes.catalogue.usable_cores", lambda: 2)  # single_thread is offered
    tree, planned = recipes_tree()
    assert len(planned) == 7
    slower = [try_recipe(tree, idea, s) for idea, s in zip(planned, (0.59, 0.54, 0.69, 0.0074), strict=False)]
    policy = build_policy("recipes", SearchSettings(), uses_llm=False)
    proposed = policy.propose(tree, 4)
    assert [e.parent_id for e in proposed] == [tree.root.id] * 3  # not a plan for the 0.69x variant
    assert [e.idea.title for e in proposed] == [i.title for i in planned[4:]]
    for expansion in proposed:
        try_recipe(tree, expansion.idea, 0.8)
    tree.add_ideas(tree.root.id, [])  # planned again: nothing left at the root, which is spent
    (request,) = policy.propose(tree, 4)  # only now is a slower variant composed upon: the fastest of them
    assert request.idea is None and request.parent_id not in slower and tree.get(request.parent_id).speedup == 0.8


def test_the_recipes_policy_composes_on_a_winner_before_the_references_other_recipes(monkeypatch):
    monkeypatch.setattr("kernelpro.recipes.catalogue.usable_cores", lambda: 2)  # single_thread is offered
    tree, planned = recipes_tree()
    winner = try_recipe(tree, planned[0], 1.4)
    loser = try_recipe(tree, planned[1], 0.6)
    policy = build_policy("recipes", SearchSettings(), uses_llm=False)
    (request,) = policy.propose(tree, 4)
    assert (request.parent_id, request.idea) == (winner, None)  # the winner's recipes are planned first
    tree.add_ideas(winner, ideas("on top", "another on top"))
    proposed = policy.propose(tree, 4)
    assert loser not in {e.parent_id for e in proposed}
    assert [e.parent_id for e in proposed] == [winner, winner, tree.root.id, tree.root.id]
