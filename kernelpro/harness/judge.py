"""The judge: candidates against one problem, from source text to ``EvalResult``.

``judge`` takes one candidate, ``judge_many`` a batch; both go through the pipeline (compiles in a CPU pool
ahead of one worker per device). The pieces of one job live in ``jobs``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kernelpro.config import Settings, load_settings
from kernelpro.harness.jobs import classify, make_job, precheck, resolve_device
from kernelpro.harness.pipeline import Pipeline
from kernelpro.harness.result import EvalResult, SecondOpinion
from kernelpro.harness.timing.second_opinion import ask
from kernelpro.problem import Problem

__all__ = ["PipelineEvaluator", "classify", "judge", "judge_many", "make_job", "precheck", "resolve_device"]


def judge(problem: Problem, candidate_source: str, device: str = "auto", settings: Settings | None = None,
          timing: bool = True) -> EvalResult:
    """Judge one candidate: correct on fresh inputs, timed, guarded. Never raises for a bad candidate."""
    return judge_many(problem, [candidate_source], device, settings, timing)[0]


def judge_many(problem: Problem, candidate_sources: list[str], device: str = "auto",
               settings: Settings | None = None, timing: bool = True) -> list[EvalResult]:
    """Judge candidates of one problem: CUDA kernels compiled ahead in the compile pool, then one worker per
    device (long-lived or fresh per candidate, as ``harness.worker_mode`` says). Results come in input order.
    """
    settings = settings or load_settings()
    with Pipeline(device, settings) as pipeline:
        return pipeline.judge([(problem, source) for source in candidate_sources], timing)


class PipelineEvaluator:
    """The local judge of one optimisation run (the ``Evaluator`` port): one pipeline, so its long-lived worker
    per GPU serves every batch of the run instead of starting anew for each. Opened on first use; ``close()``
    stops the workers (a later batch opens them again)."""

    def __init__(self, settings: Settings, device: str) -> None:
        self.settings, self.device = settings, device
        self._pipeline: Pipeline | None = None
        self._closed_stats: Any = None

    def judge_many(self, problem: Problem, candidates: Sequence[str],
                   on_verdict: Callable[[int, EvalResult], None] | None = None,
                   until: float | None = None) -> list[EvalResult]:
        if not candidates:
            return []
        if self._pipeline is None:
            self._pipeline = Pipeline(self.device, self.settings)
        return self._pipeline.judge([(problem, source) for source in candidates], on_verdict=on_verdict, until=until)

    def check_many(self, problem: Problem, candidates: Sequence[str]) -> list[EvalResult]:
        """Correctness and guards only, no timing, in the same long-lived worker (the chat's quick checks)."""
        if not candidates:
            return []
        if self._pipeline is None:
            self._pipeline = Pipeline(self.device, self.settings)
        return self._pipeline.judge([(problem, source) for source in candidates], timing=False)

    def rejudge(self, problem: Problem, candidates: Sequence[str], until: float | None = None) -> list[EvalResult]:
        """The finalists judged again, head to head with the reference, in one new worker with more rounds
        (``search.finalist_rounds_factor``), so the run's best does not rest on one judgment's noise."""
        if not candidates:
            return []
        self.close()  # the run's worker gives its GPU memory back first; it restarts if the run judges again
        with Pipeline(self.device, self.settings.for_finalists()) as pipeline:
            return pipeline.judge([(problem, source) for source in candidates], until=until)

    def second_opinion(self, problem: Problem, candidate: str, verdict: EvalResult,
                       until: float | None = None) -> SecondOpinion:
        """The candidate (a run's best) and the reference timed again in a fresh process by an independent plain
        method, compared with ``verdict`` (``harness.second_opinion``)."""
        self.close()  # the run's worker gives its GPU memory back first
        return ask(problem, candidate, verdict, self.device, self.settings, until)

    @property
    def stats(self) -> Any:
        """The pipeline's counts (judged, worker starts, restarts and why), kept once it is closed; None before the
        first candidate."""
        return self._pipeline.stats if self._pipeline is not None else self._closed_stats

    def close(self) -> None:
        if self._pipeline is not None:
            self._closed_stats = self._pipeline.stats
            self._pipeline.close()
            self._pipeline = None
