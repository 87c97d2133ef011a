"""The judge: candidates against one problem, from source text to ``EvalResult``.

``judge`` takes one candidate, ``judge_many`` a batch; both go through the pipeline (compiles in a CPU pool
ahead of one worker per device). The pieces of one job live in ``jobs``.
"""

from __future__ import annotations

from kernelpro.config import Settings, load_settings
from kernelpro.harness.jobs import classify, make_job, precheck, resolve_device
from kernelpro.harness.pipeline import Pipeline
from kernelpro.harness.result import EvalResult
from kernelpro.problem import Problem

__all__ = ["classify", "judge", "judge_many", "make_job", "precheck", "resolve_device"]


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
