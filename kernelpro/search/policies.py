"""Search policies by name, built from the settings: ``greedy``, ``beam``, ``mcts``, ``recipes``."""

from __future__ import annotations

from kernelpro.config import SearchSettings
from kernelpro.search.greedy import Beam, Greedy, Recipes
from kernelpro.search.mcts import MCTS
from kernelpro.search.policy import Rules, SearchPolicy

POLICIES = ("greedy", "beam", "mcts", "recipes")


def resolve_policy_name(name: str, uses_llm: bool) -> str:
    """``auto`` is MCTS with a language model and the built-in recipes without one."""
    if name == "auto":
        return "mcts" if uses_llm else "recipes"
    if name not in POLICIES:
        raise ValueError(f"unknown search policy {name!r}; choose one of {', '.join(('auto', *POLICIES))}")
    return name


def build_policy(name: str, settings: SearchSettings, uses_llm: bool = True) -> SearchPolicy:
    name = resolve_policy_name(name, uses_llm)
    rules = Rules(max_children=settings.max_children, widening=settings.widening, alpha=settings.alpha,
                  dead_end_after=settings.dead_end_after, min_gain=settings.min_gain, max_plans=settings.max_plans)
    if name == "mcts":
        return MCTS(rules, c_puct=settings.c_puct, best_weight=settings.best_weight, branching=settings.branching,
                    virtual_loss=settings.virtual_loss, fpu=settings.fpu, plan_prior=settings.plan_prior)
    if name == "beam":
        return Beam(rules, width=settings.beam_width, ideas_each=settings.beam_ideas)
    return Recipes(rules) if name == "recipes" else Greedy(rules)
