"""One node of the search tree (``Variant``) and the ideas planned from it (``Idea``)."""

from __future__ import annotations

import ast
import hashlib
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, Field

from kernelpro.harness.result import EvalResult
from kernelpro.harness.timing.stats import speedup_text
from kernelpro.search import objective as objectives
from kernelpro.search.kinds import Kind


class Idea(BaseModel):
    """One thing to try from a variant: the planner's (or a recipe's, or the user's), with its prior."""

    title: str
    description: str
    origin: str = "llm"
    """``llm``, ``user`` or ``recipe:<names>``."""
    source: str | None = None
    """The candidate's code when it is known before any coder runs (a recipe, code the user supplied)."""
    techniques: list[str] = Field(default_factory=list)
    expected_speedup: float | None = None
    prior: float = 0.0
    """How promising this idea looks before it is tried, in [0, 1] (``search.priors.rank_priors``)."""


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
    profile_notes: str = ""
    """What profiling said about this variant (the interpreter's reading when a model wrote one), in short."""
    no_profile: str = ""
    """Why this variant has no profile (no profiler on this device, the profiler failed...), when it has none."""
    findings: list[str] = Field(default_factory=list)
    """Finding ids (``memory_bound``, ``register_spills``...) that profiling found, most important first."""
    failure: str = ""
    """Why no verdict could be had (status ``failed``)."""
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
    prior: float = 0.0
    """How promising the idea that made this variant looked before it was judged (``search.priors``)."""
    expected_speedup: float | None = None
    """The planner's estimate of this variant's speedup over its parent, when it gave one."""
    forecast: dict[str, Any] | None = None
    """The gate's forecast (``forecast.classes.Forecast``), where a forecast gate saw the variant."""
    gated: bool = False
    """Set aside by the gate without a measurement (a copy of its expansion the forecast ranked lower, or a
    forecast taken as it is): never the best, and the policies do not count it among its parent's children."""
    ideas: list[Idea] = Field(default_factory=list)
    """Ideas planned from this variant and not yet tried, most promising first."""
    plans: int = 0
    """How many times ideas were planned from this variant."""
    exhausted: bool = False
    """A plan from this variant gave nothing new: it is not expanded again."""
    visits: int = 0
    value: float = 0.0
    """Search statistics for the report; the policies compute what they need from the tree itself."""
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

    # -- under an objective (``search.objective``); for ``time`` each is the speedup's own, for ``kernelbench``
    # (the time objective under ``search.scorecard = "kernelbench"``) the speedup in KernelBench's convention ---
    def ratio(self, objective: str = "time") -> float | None:
        """The objective's ratio by the first verdict (the speedup for time): 1.0 for the reference, None unless
        correct, and None for a correct variant without energy readings under ``energy`` or ``edp``."""
        if self.kind == "reference":
            return 1.0
        if objective == "time" or not self.correct:
            return self.speedup
        return objectives.ratio(self.result, objective)

    def deciding_ratio(self, objective: str = "time") -> float | None:
        """The objective's ratio by the deciding verdict (the finalists' re-judgment when there is one)."""
        if objective == "time":
            return self.deciding_speedup
        return objectives.ratio(self.final, objective) if self.final is not None else self.ratio(objective)

    def ratio_ci95(self, objective: str = "time") -> list[float] | None:
        return self.speedup_ci95 if objective == "time" else objectives.ci95(self.final or self.result, objective)

    def improves_under(self, objective: str = "time", min_effect: float = objectives.DEFAULT_MIN_EFFECT) -> bool:
        """``improves`` under ``objective``: for energy (or EDP), correct, not flagged, and less energy (EDP) than
        the reference beyond its interval in the deciding verdict, whatever its speed; for ``kernelbench``, faster
        in KernelBench's convention at ``min_effect`` (``EvalResult.improves_under``)."""
        if objective == "time":
            return self.improves
        return self.kind != "reference" and self.correct and not self.flagged and \
            objectives.improves(self.final or self.result, objective, min_effect)

    def measured_worse(self, objective: str = "time", min_effect: float = objectives.DEFAULT_MIN_EFFECT) -> bool:
        """Its first verdict, taken on a quiet machine, calls it worse than the reference beyond its interval
        under ``objective`` (``slower``; ``more`` energy or EDP): a re-judgment could not make it the best."""
        data = self.result or {}
        return not data.get("contended") and objectives.verdict(data, objective, min_effect) in ("slower", "more")

    def figure_text(self, objective: str = "time") -> str:
        """The deciding figure under ``objective`` with its interval, as prompts and events show it."""
        if objective == "time":
            return speedup_text(self.deciding_speedup, self.speedup_ci95)
        return objectives.figure_text(self.final or self.result, objective)

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
        """No verdict could be had, and why."""
        self.status = "failed"
        self.failure = why

    @property
    def settled(self) -> bool:
        return self.status != "pending"


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
