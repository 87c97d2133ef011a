"""Search policies by name (``kernelpro.seams.SEARCH_POLICIES``), built from the settings; ``auto`` resolved."""

from __future__ import annotations

from kernelpro.config import SearchSettings
from kernelpro.seams import AUTO_POLICY, SEARCH_POLICIES
from kernelpro.search.policy import SearchPolicy


def resolve_policy_name(name: str, uses_llm: bool) -> str:
    """``auto`` is MCTS with a language model and the built-in recipes without one; any other name must be
    registered."""
    if name == AUTO_POLICY:
        return "mcts" if uses_llm else "recipes"
    return SEARCH_POLICIES.check(name)


def build_policy(name: str, settings: SearchSettings, uses_llm: bool = True) -> SearchPolicy:
    return SEARCH_POLICIES.build(resolve_policy_name(name, uses_llm), settings)
