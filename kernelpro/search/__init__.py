"""The search: the variant tree and its lifecycle, and the policies that choose what to grow."""

from kernelpro.search.kinds import Kind, detect_kind
from kernelpro.search.policies import build_policy
from kernelpro.search.policy import Expansion, SearchPolicy
from kernelpro.search.tree import Idea, Variant, VariantTree

__all__ = ["Expansion", "Idea", "Kind", "SearchPolicy", "Variant", "VariantTree", "build_policy", "detect_kind"]
