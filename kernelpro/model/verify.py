"""The patched model judged against the original, end to end: correct on the judge's fresh inputs at the
dtype's tolerance, and its speedup with its interval, by the same judge as any candidate (in its sandboxed
worker). Each region is judged spliced alone first, so a winner that does not fit its place (other weights, a
failure in the whole model) is left out of the final model, and each region's measured gain stands beside the
gain Amdahl's law predicts from its share and its own speedup."""

from __future__ import annotations

from collections.abc import Sequence

from kernelpro.config import Settings
from kernelpro.harness.result import EvalResult
from kernelpro.problem import Problem


def predicted_gain(parts: Sequence[tuple[float, float]]) -> float:
    """Amdahl's law: the whole's speedup when each ``(share, speedup)`` part runs that much faster."""
    rest = 1.0 - sum(share for share, _ in parts)
    return 1.0 / (max(rest, 0.0) + sum(share / speedup for share, speedup in parts))


def judge_patched(name: str, reference_source: str, candidates: list[str], device: str,
                  settings: Settings) -> list[EvalResult]:
    """Each patched model's verdict against the whole model as the reference, by the judge ``harness.backend``
    names."""
    from kernelpro.seams import JUDGES

    problem = Problem(name=name, source=reference_source)
    judge = JUDGES.build(settings.harness.backend, settings, device)
    try:
        return judge.judge_many(problem, candidates)
    finally:
        judge.close()


def correct(result: EvalResult) -> bool:
    return result.status == "ok" and result.correct
