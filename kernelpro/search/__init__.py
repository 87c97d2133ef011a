"""The search: the variant tree and its lifecycle, the policies that choose what to grow, and the recipes."""

from kernelpro.search.kinds import Kind, detect_kind
from kernelpro.search.policies import build_policy
from kernelpro.search.policy import Expansion, SearchPolicy
from kernelpro.search.recipes import Recipe, recipe_expansions, recipes_for
from kernelpro.search.tree import Idea, Variant, VariantTree

__all__ = ["Expansion", "Idea", "Kind", "Recipe", "SearchPolicy", "Variant", "VariantTree", "build_policy",
           "detect_kind", "recipe_expansions", "recipes_for"]
