"""The seams the optimisation loop reaches the GPU and the memory through: plain protocols over plain data.

They sit at the bottom of the stack, beside ``result.py``, so every layer may name them and no arrow points up.
The local pipeline implements ``Evaluator`` (``harness.judge.PipelineEvaluator``); a distributed judge, a
forecaster (``Gate``) or another memory plugs in at the composition root (``kernelpro.app.compose``) without the graph
knowing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from kernelpro.harness.result import EvalResult, SecondOpinion
from kernelpro.problem import Problem


@runtime_checkable
class Evaluator(Protocol):
    """Judges candidates of one problem. Never raises for a bad candidate: a verdict says what went wrong."""

    def judge_many(self, problem: Problem, candidates: Sequence[str],
                   on_verdict: Callable[[int, EvalResult], None] | None = None,
                   until: float | None = None) -> list[EvalResult]:
        """One verdict per candidate source, in input order; ``on_verdict(index, result)`` as each is reached. A
        candidate not judged by ``until`` (a ``time.monotonic()`` instant) comes back with the reason
        ``result.CUT_AT_DEADLINE``: no verdict on it."""
        ...

    def check_many(self, problem: Problem, candidates: Sequence[str]) -> list[EvalResult]:
        """Correctness and guards only, no timing: one verdict per candidate source, in input order."""
        ...

    def rejudge(self, problem: Problem, candidates: Sequence[str], until: float | None = None) -> list[EvalResult]:
        """The finalists judged again, head to head with the reference, with more rounds (``until`` as in
        ``judge_many``)."""
        ...

    def second_opinion(self, problem: Problem, candidate: str, verdict: EvalResult,
                       until: float | None = None) -> SecondOpinion:
        """The candidate and the reference timed again by an independent method in a fresh process, compared with
        ``verdict`` (the judge's on the candidate); never raises for a bad candidate."""
        ...

    def close(self) -> None:
        """Stop whatever workers the evaluator holds; it may be used again afterwards (it reopens)."""
        ...


class ProfileReport(BaseModel):
    """What the micro-profiling tools said about one candidate."""

    text: str
    """The rendered findings, for the interpreter (or, without an LLM, the profile summary itself)."""
    finding_ids: list[str]
    """Finding ids (``memory_bound``, ``register_spills``...), most important first."""
    headline: str
    """One line: the top finding."""
    gpu_s: float = 0.0
    data: dict[str, Any] = Field(default_factory=dict)
    """The full diagnosis as JSON, for the read_metrics tool and the report."""
    missing: str = ""
    """Why there is no profile (the profiler failed, ncu saw no kernel...); set only on a report without one."""


class Profiler(Protocol):
    def __call__(self, problem: Problem, source: str | None) -> ProfileReport | None:
        """Profile the candidate (the reference when ``source`` is None). When no profile could be had: a report
        with ``missing`` saying why (or None when the profiler cannot say)."""
        ...


class Memory(Protocol):
    """The search memory as the loop uses it: related lessons in, attempt records out."""

    def lessons(self, problem: Problem, query: str) -> str: ...

    def remember(self, records: Sequence[Any]) -> int: ...

    def technique_scores(self, problem: Problem) -> dict[str, float]:
        """Technique tag -> how well it did on related problems, in [-1, 1] (a prior for the search)."""
        ...


class Proposal(BaseModel):
    """A candidate written but not judged, as the gate sees it."""

    variant_id: str
    parent_id: str
    idea: str
    source: str
    prior: float = 0.0
    reference_ms: float | None = None
    """The reference's time, once any candidate's verdict measured it (for the gate's roofline bound)."""
    traffic_bytes: int | None = None
    """The problem's compulsory bytes, where a verdict measured them."""
    hardware: str = ""


@runtime_checkable
class Gate(Protocol):
    """Which of several proposed candidates deserve the GPU (a forecaster plugs in here)."""

    name: str

    def choose(self, problem: Problem, proposals: Sequence[Proposal]) -> list[str]:
        """The ids of the proposals to judge; the others are set aside unjudged, with the gate's reason (its
        ``why(variant_id)`` where it has one) and its forecast (``forecasts[variant_id]``, where it has one)."""
        ...


class MeasureAll:
    """The default gate: every proposal is judged."""

    name = "measure_all"

    def choose(self, problem: Problem, proposals: Sequence[Proposal]) -> list[str]:
        return [p.variant_id for p in proposals]


__all__ = ["Evaluator", "Gate", "MeasureAll", "Memory", "ProfileReport", "Profiler", "Proposal"]
