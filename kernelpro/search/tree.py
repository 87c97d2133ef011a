"""The tree of variants a search grows: the reference at the root, each child one attempt to improve its parent.

The tree lives in the optimisation graph's state as a plain ``dict[str, dict]`` (``to_state``/``from_state``),
so a checkpoint can store it as JSON; ``VariantTree`` is the view that answers questions about it.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, Field

from kernelpro.harness.result import EvalResult
from kernelpro.harness.stats import speedup_text
from kernelpro.search.kinds import Kind, detect_kind

VariantStatus = Literal["pending", "judged", "failed"]


def _now() -> datetime:
    return datetime.now(timezone.utc)


class Variant(BaseModel):
    """One node of the search tree: a candidate, what it tried, and what the judge said of it."""

    id: str
    """Short and stable: derived from the parent and the source (see ``VariantTree.spawn``)."""
    parent_id: str | None = None
    depth: int = 0
    source: str
    """The candidate's code; the root's is the reference problem."""
    kind: Kind
    idea: str = ""
    """What this variant tried, in a sentence."""
    origin: str = "llm"
    """``reference``, ``llm`` or ``recipe:<name>`` (names joined by ``+`` when one recipe combines several)."""
    status: VariantStatus = "pending"
    """pending: not judged yet; judged: the judge returned a verdict (any verdict); failed: no verdict could be
    had (no code came out of the coder, or judging itself broke)."""
    result: dict[str, Any] | None = None
    """The ``EvalResult`` as a JSON dict."""
    speedup: float | None = None
    """Reference time over candidate time; None unless the judge found the variant correct."""
    diagnosis: str = ""
    """What profiling said about this variant, in short."""
    findings: list[str] = Field(default_factory=list)
    """Diagnosis ids (``memory_bound``, ``register_spills``...) that profiling found."""
    lesson: str = ""
    """What this attempt taught, for the search memory."""
    techniques: list[str] = Field(default_factory=list)
    """Technique tags (the planner's or the critic's), for the search memory."""
    review: dict[str, Any] | None = None
    """The critic's review, when a language model wrote one."""
    flagged: bool = False
    """The critic suspects a reward hack or a correctness risk: kept and reported, never chosen as the best."""
    compile_fixes: list[tuple[str, str]] = Field(default_factory=list)
    """Compile errors the coder fixed on the way to this candidate, with what it changed."""
    final: dict[str, Any] | None = None
    """The finalists' re-judgment (head to head with the reference, more rounds, a fresh worker), when this
    variant was one; the run's best is chosen from these."""
    visits: int = 0
    value: float = 0.0
    """Search statistics; their meaning belongs to the policy that updates them (``SearchPolicy.observe``)."""
    created_at: datetime = Field(default_factory=_now)
    iteration: int = 0

    @property
    def correct(self) -> bool:
        return self.speedup is not None

    @property
    def deciding_result(self) -> EvalResult | None:
        """The verdict that decides whether this variant improves on the reference: the finalists' re-judgment
        when there is one, else the first."""
        data = self.final or self.result
        return EvalResult.model_validate(data) if data else None

    @property
    def improves(self) -> bool:
        """Correct and faster than the reference beyond the interval and the minimum effect, on a quiet machine."""
        result = self.deciding_result
        return self.kind != "reference" and self.correct and not self.flagged and result is not None and \
            result.improves

    @property
    def deciding_speedup(self) -> float | None:
        result = self.deciding_result
        return result.speedup if result is not None and result.status == "ok" else self.speedup

    @property
    def speedup_ci95(self) -> list[float] | None:
        result = self.deciding_result
        return result.speedup_ci95 if result is not None else None

    @property
    def problem_findings(self) -> list[dict[str, Any]]:
        """What the judge found wrong with the problem itself while judging this variant (``constant_output``)."""
        return list((self.result or {}).get("problem_findings") or [])

    @property
    def verdict(self) -> str:
        """The judge's status (``ok``, ``incorrect``...), or the variant's own status when it has no result."""
        return str(self.result["status"]) if self.result else self.status

    @property
    def recipes(self) -> list[str]:
        """The built-in recipes this variant applied itself (empty unless its origin is ``recipe:...``)."""
        return self.origin.removeprefix("recipe:").split("+") if self.origin.startswith("recipe:") else []

    def record(self, result: EvalResult) -> None:
        """Store the judge's verdict; the speedup counts only for a correct variant."""
        self.status = "judged"
        self.result = result.model_dump(mode="json")
        self.speedup = result.speedup if result.status == "ok" and result.correct else None

    def mark_failed(self, why: str) -> None:
        """No verdict could be had; ``why`` goes into the diagnosis."""
        self.status = "failed"
        self.diagnosis = why


def _recipe_set(origin: str) -> frozenset[str]:
    return frozenset(origin.removeprefix("recipe:").split("+")) if origin.startswith("recipe:") else frozenset()


def normalised_source(source: str) -> str:
    """The code's syntax tree without docstrings (comments and layout are gone once parsed); the text itself when
    it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False)


def variant_id(parent_id: str | None, source: str) -> str:
    """Eight hex digits of a hash of the parent and the source: the same attempt gets the same id."""
    return hashlib.sha256(f"{parent_id or ''}\n{source}".encode()).hexdigest()[:8]


class VariantTree:
    """The variants of one search, by id, with the queries the policies, prompts and report need."""

    def __init__(self, variants: dict[str, Variant] | None = None) -> None:
        self.variants: dict[str, Variant] = dict(variants or {})

    # -- state ------------------------------------------------------------------------------------------
    @classmethod
    def from_state(cls, state: dict[str, dict[str, Any]] | None) -> VariantTree:
        return cls({key: Variant.model_validate(value) for key, value in (state or {}).items()})

    def to_state(self) -> dict[str, dict[str, Any]]:
        return {key: variant.model_dump(mode="json") for key, variant in self.variants.items()}

    @classmethod
    def with_root(cls, reference_source: str) -> VariantTree:
        """A new tree holding only the reference."""
        tree = cls()
        tree.add(Variant(id=variant_id(None, reference_source), source=reference_source, kind="reference",
                         idea="the reference", origin="reference", status="judged", speedup=1.0))
        return tree

    # -- building ---------------------------------------------------------------------------------------
    def add(self, variant: Variant) -> Variant:
        if variant.id in self.variants:
            raise ValueError(f"variant {variant.id} is already in the tree")
        if variant.parent_id is not None and variant.parent_id not in self.variants:
            raise KeyError(f"variant {variant.id}: no parent {variant.parent_id} in the tree")
        self.variants[variant.id] = variant
        return variant

    def spawn(self, parent_id: str, source: str, idea: str, origin: str, iteration: int = 0) -> Variant:
        """Add a pending child of ``parent_id``; a second identical child gets a suffixed id."""
        parent = self.get(parent_id)
        base = new_id = variant_id(parent_id, source)
        suffix = 1
        while new_id in self.variants:
            suffix += 1
            new_id = f"{base}-{suffix}"
        return self.add(Variant(id=new_id, parent_id=parent_id, depth=parent.depth + 1, source=source,
                                kind=detect_kind(source), idea=idea, origin=origin, iteration=iteration))

    # -- queries ----------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.variants)

    def __iter__(self) -> Iterator[Variant]:
        """Variants in the order they were added."""
        return iter(self.variants.values())

    def __contains__(self, variant_id: object) -> bool:
        return variant_id in self.variants

    def get(self, variant_id: str) -> Variant:
        try:
            return self.variants[variant_id]
        except KeyError:
            raise KeyError(f"no variant {variant_id} in the tree") from None

    @property
    def root(self) -> Variant:
        return next(v for v in self.variants.values() if v.parent_id is None)

    def children(self, variant_id: str) -> list[Variant]:
        """Children in the order they were added."""
        return [v for v in self.variants.values() if v.parent_id == variant_id]

    def path_to(self, variant_id: str) -> list[Variant]:
        """From the root down to ``variant_id``, both included."""
        path = [self.get(variant_id)]
        while path[-1].parent_id is not None:
            path.append(self.get(path[-1].parent_id))
        return path[::-1]

    def correct(self) -> list[Variant]:
        """Correct candidates (never the reference, never one the critic flagged), fastest first; none at all on a
        problem the judge found degenerate (``problem_finding``), where no speedup is an improvement."""
        if self.problem_finding() is not None:
            return []
        found = [v for v in self.variants.values() if v.kind != "reference" and v.correct and not v.flagged]
        return sorted(found, key=lambda v: -(v.speedup or 0.0))

    def problem_finding(self) -> dict[str, Any] | None:
        """The first finding about the problem itself in any variant's verdict (``reason``, ``message``)."""
        return next((f for v in self.variants.values() for f in v.problem_findings), None)

    def best(self) -> Variant | None:
        """The fastest candidate that improves on the reference (correct, faster beyond its interval, not flagged),
        or None: a candidate that is not faster is never the best. Once finalists were re-judged, only they count,
        at their re-judged speedups. None at all on a degenerate problem (``problem_finding``)."""
        if self.problem_finding() is not None:
            return None
        finals = [v for v in self.variants.values() if v.final is not None]
        found = [v for v in (finals or self.variants.values()) if v.improves]
        return max(found, key=lambda v: v.deciding_speedup or 0.0) if found else None

    def finalists(self, n: int) -> list[Variant]:
        """The ``n`` candidates most worth re-judging: correct, not flagged, fastest first by their first verdict,
        those that measured faster before those that did not, each code once."""
        chosen: list[Variant] = []
        seen: set[str] = set()
        for variant in sorted(self.correct(), key=lambda v: (not v.improves, -(v.speedup or 0.0))):
            key = normalised_source(variant.source)
            if key not in seen and len(chosen) < n:
                seen.add(key)
                chosen.append(variant)
        return chosen

    def leaderboard(self, n: int = 5) -> list[Variant]:
        """Up to ``n`` correct candidates with their measured speedups, fastest first, for contrastive prompts.

        When there are more than ``n``, the slowest one takes the last place, so the faster ones have
        something to be contrasted with.
        """
        found = self.correct()
        if len(found) <= n or n < 2:
            return found[:n]
        return [*found[: n - 1], found[-1]]

    def duplicate_of(self, source: str) -> Variant | None:
        """A variant anywhere in the tree with exactly this source (judging it again would teach nothing)."""
        return next((v for v in self.variants.values() if v.source == source), None)

    def equivalent_of(self, source: str, origin: str = "") -> Variant | None:
        """A judged candidate that is the same as this one: the same code once comments, docstrings and layout
        are set aside, or the same recipes composed in another order."""
        recipes = _recipe_set(origin)
        key = normalised_source(source)
        for variant in self.variants.values():
            if variant.kind == "reference" or variant.result is None:
                continue
            if (recipes and recipes == _recipe_set(variant.origin)) or normalised_source(variant.source) == key:
                return variant
        return None

    # -- display ----------------------------------------------------------------------------------------
    def render_ascii(self, idea_width: int = 60) -> str:
        """The tree, one variant a line: id, speedup or verdict, origin and idea; ``*`` marks the best."""
        if not self.variants:
            return "(empty)"
        best = self.best()
        lines: list[str] = []

        def describe(variant: Variant) -> str:
            if variant.kind == "reference":
                outcome = "reference"
            elif variant.correct:
                outcome = speedup_text(variant.speedup)
            else:
                outcome = variant.verdict
            idea = " ".join(variant.idea.split())
            if len(idea) > idea_width:
                idea = idea[: idea_width - 3] + "..."
            mark = " *" if best is not None and variant.id == best.id else ""
            return f"{variant.id} {outcome}{mark}  [{variant.origin}] {idea}".rstrip()

        def walk(variant: Variant, prefix: str, last: bool, top: bool) -> None:
            connector = "" if top else ("└── " if last else "├── ")
            lines.append(prefix + connector + describe(variant))
            kids = self.children(variant.id)
            below = prefix if top else prefix + ("    " if last else "│   ")
            for i, kid in enumerate(kids):
                walk(kid, below, i == len(kids) - 1, False)

        walk(self.root, "", True, True)
        return "\n".join(lines)
