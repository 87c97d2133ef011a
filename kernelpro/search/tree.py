"""The tree of variants a search grows: the reference at the root, each child one attempt to improve its parent.

The tree lives in the optimisation graph's state as a plain ``dict[str, dict]`` (``to_state``/``from_state``),
so a checkpoint can store it as JSON; ``VariantTree`` is the view that answers questions about it and the one
way variants are born (``spawn``), get their code (``write_code``) and their verdicts (``record``,
``mark_failed``). The tree is seen under the run's objective (``search.objective``: time, energy or EDP) and,
for time, its scorecard (``search.scorecard``): its ordering, ``best`` and ``finalists`` follow the deciding
figure's ratio and call (``figure``: the objective's, or ``kernelbench`` for KernelBench's convention).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from kernelpro.harness.result import EvalResult
from kernelpro.harness.timing.stats import speedup_text
from kernelpro.search.kinds import detect_kind
from kernelpro.search.objective import DEFAULT_MIN_EFFECT
from kernelpro.search.objective import check as check_objective
from kernelpro.search.objective import figure as deciding_figure
from kernelpro.search.objective import figure_text as objective_figure
from kernelpro.search.variant import Idea, Variant, normalised_source, variant_id

__all__ = ["Idea", "Variant", "VariantTree", "normalised_source", "speedup_text", "variant_id"]


class VariantTree:
    """The variants of one search, by id, with the queries the policies, prompts and report need."""

    def __init__(self, variants: dict[str, Variant] | None = None, objective: str = "time",
                 scorecard: str = "kernelpro", min_effect: float = DEFAULT_MIN_EFFECT) -> None:
        self.variants: dict[str, Variant] = dict(variants or {})
        self.objective = check_objective(objective)
        self.scorecard = scorecard
        deciding_figure(objective, scorecard)  # refuses an unknown scorecard
        self.min_effect = min_effect
        """``harness.min_effect``, at which a ``kernelbench`` call is made."""

    # -- state ------------------------------------------------------------------------------------------
    @classmethod
    def from_state(cls, state: dict[str, dict[str, Any]] | None, objective: str = "time",
                   scorecard: str = "kernelpro", min_effect: float = DEFAULT_MIN_EFFECT) -> VariantTree:
        return cls({key: Variant.model_validate(value) for key, value in (state or {}).items()}, objective,
                   scorecard, min_effect)

    @classmethod
    def of_run(cls, state: dict[str, Any]) -> VariantTree:
        """The tree of an optimisation graph's state, seen under the objective, scorecard and minimum effect the
        run started with."""
        return cls.from_state(state.get("variants", {}), state.get("objective", "time"),
                              state.get("scorecard", "kernelpro"), state.get("min_effect", DEFAULT_MIN_EFFECT))

    @property
    def figure(self) -> str:
        """What decides: the objective's figure, or ``kernelbench`` (time read in KernelBench's convention)."""
        return deciding_figure(self.objective, self.scorecard)

    def improves(self, variant: Variant) -> bool:
        """``variant`` improves on the reference by the deciding figure (``figure``)."""
        return variant.improves_under(self.figure, self.min_effect)

    def to_state(self) -> dict[str, dict[str, Any]]:
        return {key: variant.model_dump(mode="json") for key, variant in self.variants.items()}

    @classmethod
    def with_root(cls, reference_source: str) -> VariantTree:
        """A new tree holding only the reference."""
        tree = cls()
        tree.add(Variant(id=variant_id(None, reference_source), source=reference_source, kind="reference",
                         idea="the reference implementation", origin="reference", status="judged", speedup=1.0))
        return tree

    # -- building ---------------------------------------------------------------------------------------
    def add(self, variant: Variant) -> Variant:
        if variant.id in self.variants:
            raise ValueError(f"variant {variant.id} is already in the tree")
        if variant.parent_id is not None and variant.parent_id not in self.variants:
            raise KeyError(f"variant {variant.id}: no parent {variant.parent_id} in the tree")
        self.variants[variant.id] = variant
        return variant

    def spawn(self, parent_id: str, source: str, idea: str, origin: str, iteration: int = 0, *,
              prior: float = 0.0, techniques: Iterable[str] = (), expected_speedup: float | None = None) -> Variant:
        """Add a pending child of ``parent_id``. ``source`` may be empty when the code is yet to be written
        (``write_code``); the id comes from the parent and the source (or the idea), a second identical child
        gets a suffixed id."""
        parent = self.get(parent_id)
        base = new_id = variant_id(parent_id, source or f"idea: {idea}")
        suffix = 1
        while new_id in self.variants:
            suffix += 1
            new_id = f"{base}-{suffix}"
        return self.add(Variant(id=new_id, parent_id=parent_id, depth=parent.depth + 1, source=source,
                                kind=detect_kind(source) if source else "pytorch", idea=idea, origin=origin,
                                iteration=iteration, prior=prior, techniques=list(techniques),
                                expected_speedup=expected_speedup))

    def spawn_from(self, parent_id: str, idea: Idea, iteration: int = 0) -> Variant:
        """A pending child for ``idea``, which leaves the parent's queue of untried ideas."""
        parent = self.get(parent_id)
        parent.ideas = [i for i in parent.ideas if i != idea]
        return self.spawn(parent_id, idea.source or "", idea.description, idea.origin, iteration, prior=idea.prior,
                          techniques=idea.techniques, expected_speedup=idea.expected_speedup)

    def write_code(self, variant_id: str, source: str, compile_fixes: Iterable[tuple[str, str]] = ()) -> Variant:
        """The pending variant's code, once written; its kind follows from it."""
        variant = self.get(variant_id)
        if variant.settled:
            raise ValueError(f"variant {variant_id} already has its verdict; its code cannot change")
        variant.source, variant.kind = source, detect_kind(source)
        variant.compile_fixes = [tuple(f) for f in compile_fixes]  # type: ignore[misc]
        return variant

    def record(self, variant_id: str, result: EvalResult) -> Variant:
        """The judge's verdict on a pending variant."""
        variant = self.get(variant_id)
        variant.record(result)
        return variant

    def mark_failed(self, variant_id: str, why: str) -> Variant:
        """No verdict could be had for the variant (no code came out of the coder, the gate set it aside...)."""
        variant = self.get(variant_id)
        variant.mark_failed(why)
        return variant

    def mark_gated(self, variant_id: str, why: str) -> Variant:
        """The gate set the variant aside unmeasured: failed, with the gate's reason, and out of the policies' view."""
        variant = self.mark_failed(variant_id, why)
        variant.gated = True
        return variant

    def add_ideas(self, variant_id: str, ideas: Iterable[Idea]) -> list[Idea]:
        """Queue a new plan's ideas at the variant, most promising first; an empty plan exhausts it."""
        variant = self.get(variant_id)
        tried = {c.idea for c in self.children(variant_id, gated=True)} | {i.description for i in variant.ideas}
        fresh = [i for i in ideas if i.description not in tried]
        variant.plans += 1
        variant.ideas = sorted([*variant.ideas, *fresh], key=lambda i: -i.prior)
        if not fresh:
            variant.exhausted = True
        return fresh

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

    def pending(self) -> list[Variant]:
        """Variants waiting for code or a verdict, in the order they were added."""
        return [v for v in self.variants.values() if not v.settled]

    def children(self, variant_id: str, gated: bool = False) -> list[Variant]:
        """Children in the order they were added; those the gate set aside only with ``gated``."""
        return [v for v in self.variants.values() if v.parent_id == variant_id and (gated or not v.gated)]

    def path_to(self, variant_id: str) -> list[Variant]:
        """From the root down to ``variant_id``, both included."""
        path = [self.get(variant_id)]
        while path[-1].parent_id is not None:
            path.append(self.get(path[-1].parent_id))
        return path[::-1]

    def correct(self) -> list[Variant]:
        """Correct candidates (never the reference, never one the critic flagged), best first under the objective
        (fastest first for time; those without the objective's figure last); none at all on a problem the judge
        found degenerate (``problem_finding``), where no speedup is an improvement."""
        if self.problem_finding() is not None:
            return []
        found = [v for v in self.variants.values() if v.kind != "reference" and v.correct and not v.flagged]
        return sorted(found, key=lambda v: -(v.ratio(self.figure) or 0.0))

    def problem_finding(self) -> dict[str, Any] | None:
        """The first finding about the problem itself in any variant's verdict (``reason``, ``message``)."""
        return next((f for v in self.variants.values() for f in v.problem_findings), None)

    def best(self) -> Variant | None:
        """The fastest candidate that improves on the reference (correct, faster beyond its interval, not flagged),
        or None: a candidate that is not faster is never the best. Once finalists were re-judged, only they count,
        at their re-judged speedups. None at all on a degenerate problem (``problem_finding``). Under ``energy``
        (``edp``): the one with the largest energy (EDP) ratio among those whose call says less beyond its
        interval; one that uses no less energy than the reference is never the best."""
        if self.problem_finding() is not None:
            return None
        finals = [v for v in self.variants.values() if v.final is not None]
        found = [v for v in (finals or self.variants.values()) if self.improves(v)]
        return max(found, key=lambda v: v.deciding_ratio(self.figure) or 0.0) if found else None

    def finalists(self, n: int) -> list[Variant]:
        """The ``n`` candidates most worth re-judging: correct, not flagged, fastest first by their first verdict,
        those that measured faster before those that did not, each code once (under an energy objective: by
        energy, those that measured less energy first). One measured slower (more energy) beyond its interval is
        left out: it could not become the best, and judging it again would only spend GPU time."""
        chosen: list[Variant] = []
        seen: set[str] = set()
        figure = self.figure
        hopeful = [v for v in self.correct() if not v.measured_worse(figure, self.min_effect)]
        for variant in sorted(hopeful, key=lambda v: (not self.improves(v), -(v.ratio(figure) or 0.0))):
            key = normalised_source(variant.source)
            if key not in seen and len(chosen) < n:
                seen.add(key)
                chosen.append(variant)
        return chosen

    def leaderboard(self, n: int = 5) -> list[Variant]:
        """Up to ``n`` correct candidates with their measured speedups, fastest first (best first under the
        objective), for contrastive prompts.

        When there are more than ``n``, the slowest one takes the last place, so the faster ones have
        something to be contrasted with.
        """
        found = self.correct()
        if len(found) <= n or n < 2:
            return found[:n]
        return [*found[: n - 1], found[-1]]

    def equivalent_of(self, candidate: Variant) -> Variant | None:
        """Another judged candidate that is the same as ``candidate``: what the judge runs is the same, that is
        the same code once comments, docstrings and layout are set aside (``normalised_source``), the one test
        of sameness. A recipe's code is rendered from all its ingredients in one order around one base module,
        so the same recipes composed in another order are the same code, and a composed recipe is never the same
        as one of its ingredients alone. The origin plays no part: a composed recipe's names only what it added."""
        key = normalised_source(candidate.source)
        for variant in self.variants.values():
            if variant.id == candidate.id or variant.kind == "reference" or variant.result is None:
                continue
            if normalised_source(variant.source) == key:
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
                if self.figure != "time":
                    outcome += f", {objective_figure(variant.result, self.figure)}"
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
            kids = self.children(variant.id, gated=True)
            below = prefix if top else prefix + ("    " if last else "│   ")
            for i, kid in enumerate(kids):
                walk(kid, below, i == len(kids) - 1, False)

        walk(self.root, "", True, True)
        return "\n".join(lines)
