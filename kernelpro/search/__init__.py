"""The search: the variant tree, the policies that choose what to expand, and the built-in recipes."""

from kernelpro.search.kinds import Kind, detect_kind
from kernelpro.search.policy import BestFirst, SearchPolicy
from kernelpro.search.recipes import Recipe, recipe_expansions, recipes_for
from kernelpro.search.tree import Variant, VariantTree

__all__ = ["BestFirst", "Kind", "Recipe", "SearchPolicy", "Variant", "VariantTree", "detect_kind",
           "recipe_expansions", "recipes_for"]
