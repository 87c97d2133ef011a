"""Each code judged once: an ``Evaluator`` around the run's judge that answers a candidate from a verdict it
already knows instead of judging it again.

A verdict is known by the code the judge runs (``normalised_source``: comments, docstrings and layout set aside);
the problem, the device and the correctness profile are the run's own, so within a run the code is the whole key.
It knows the run's verdicts (``remember``: whatever they say, as the run took them; the first on a code stands),
the verdicts taken before the run (``JudgedBefore``: only those about the code itself), and each verdict its own
``judge_many`` reaches. The same code twice in one call is judged once. A candidate answered so comes back as a
copy of the verdict marked ``details.answered_by``, and ``reused`` says, per candidate of the last call, whose
verdict answered it, so a caller can tell what the judge did not do. Correctness checks, the finalists' re-judging
and second opinions go to the inner judge as asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from kernelpro.harness.ports import Evaluator
from kernelpro.harness.result import CUT_AT_DEADLINE, EvalResult, SecondOpinion
from kernelpro.problem import Problem
from kernelpro.runs.judged_before import JudgedBefore
from kernelpro.search.tree import normalised_source


def answered(result: EvalResult, by: str) -> EvalResult:
    """A copy of ``result`` for a candidate answered by another's verdict (``details.answered_by``), so whoever
    sums the judge's seconds over a run's verdicts counts that judgment once."""
    copy = result.model_copy(deep=True)
    copy.details["answered_by"] = by
    return copy


@dataclass(frozen=True)
class Reused:
    """Whose verdict answered a candidate: a candidate's label, or the label of a verdict taken before the run
    (``before_run``)."""

    label: str
    before_run: bool = False


class JudgedOnce:
    """The ``Evaluator`` port around ``inner``, answering code it has a verdict on (see the module)."""

    def __init__(self, inner: Evaluator, before: JudgedBefore | None = None) -> None:
        self.inner = inner
        self.before = before if before is not None else JudgedBefore()
        self.known: dict[str, tuple[EvalResult, str]] = {}  # normalised code -> verdict, whose it is
        self.reused: dict[int, Reused] = {}  # of the last judge_many: candidate index -> whose verdict answered it

    def remember(self, source: str, result: EvalResult, label: str) -> None:
        """Know ``result`` as the verdict on ``source``, ``label``'s; an earlier verdict on the same code stands."""
        self.known.setdefault(normalised_source(source), (result, label))

    def answer(self, source: str) -> tuple[EvalResult, Reused] | None:
        """The known verdict on ``source`` (the run's first, then one from before the run) as its answer, or None."""
        if (found := self._find(source)) is None:
            return None
        result, reused = found
        return answered(result, reused.label), reused

    def _find(self, source: str) -> tuple[EvalResult, Reused] | None:
        if (known := self.known.get(normalised_source(source))) is not None:
            return known[0], Reused(known[1])
        if (earlier := self.before.find(source)) is not None:
            return earlier[0], Reused(earlier[1], before_run=True)
        return None

    def new_codes(self, candidates: Sequence[str]) -> list[list[int]]:
        """The candidates no known verdict answers, by code in the order each first comes: one judgment a group,
        the group's first judged, the rest answered from it."""
        groups: dict[str, list[int]] = {}
        for index, source in enumerate(candidates):
            if self._find(source) is None:
                groups.setdefault(normalised_source(source), []).append(index)
        return list(groups.values())

    def judge_many(self, problem: Problem, candidates: Sequence[str],
                   on_verdict: Callable[[int, EvalResult], None] | None = None,
                   until: float | None = None, labels: Sequence[str] | None = None) -> list[EvalResult]:
        """The port's ``judge_many``, each new code judged once by the inner judge; ``labels`` name the candidates
        (a run's variant ids) for the verdicts they give others. ``reused`` is set before any ``on_verdict``. A
        candidate answered by one cut at ``until`` is cut too (``CUT_AT_DEADLINE``): neither has a verdict."""
        names = list(labels) if labels is not None else [f"candidate {i}" for i in range(len(candidates))]
        results: list[EvalResult | None] = [None] * len(candidates)
        self.reused = {}
        for index, source in enumerate(candidates):
            if (found := self.answer(source)) is not None:
                results[index], self.reused[index] = found
        groups = self.new_codes(candidates)
        for group in groups:
            self.reused.update({twin: Reused(names[group[0]]) for twin in group[1:]})
        if on_verdict is not None:
            for index, result in enumerate(results):
                if result is not None:
                    on_verdict(index, result)

        def settle(group: list[int], result: EvalResult) -> list[tuple[int, EvalResult]]:
            cut = result.reason == CUT_AT_DEADLINE
            settled = [(group[0], result)] + [(twin, result if cut else answered(result, names[group[0]]))
                                              for twin in group[1:]]
            for index, verdict in settled:
                results[index] = verdict
            return settled

        def reached(index: int, result: EvalResult) -> None:
            for member, verdict in settle(groups[index], result):
                if on_verdict is not None:
                    on_verdict(member, verdict)

        fresh = self.inner.judge_many(problem, [candidates[group[0]] for group in groups], on_verdict=reached,
                                      until=until) if groups else []
        for group, result in zip(groups, fresh, strict=True):
            settle(group, result)
            if result.reason != CUT_AT_DEADLINE:
                self.remember(candidates[group[0]], result, names[group[0]])
        assert all(result is not None for result in results), "every candidate answered or judged"
        return cast(list[EvalResult], results)

    def check_many(self, problem: Problem, candidates: Sequence[str]) -> list[EvalResult]:
        return self.inner.check_many(problem, candidates)

    def rejudge(self, problem: Problem, candidates: Sequence[str], until: float | None = None) -> list[EvalResult]:
        return self.inner.rejudge(problem, candidates, until=until)

    def second_opinion(self, problem: Problem, candidate: str, verdict: EvalResult,
                       until: float | None = None) -> SecondOpinion:
        return self.inner.second_opinion(problem, candidate, verdict, until=until)

    def close(self) -> None:
        self.inner.close()
