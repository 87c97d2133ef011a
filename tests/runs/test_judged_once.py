"""Each code judged once, around the real CPU judge: a repeat (another layout, or twice in one call) is answered
from the verdict already known without reaching the judge, a different candidate is judged, a verdict taken before
the run answers the same code, and a candidate cut at the caller's deadline is no verdict to answer from."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import pytest

from kernelpro.app.compose import evaluator
from kernelpro.harness.ports import Evaluator
from kernelpro.harness.result import CUT_AT_DEADLINE, EvalResult, SecondOpinion
from kernelpro.problem import Problem
from kernelpro.runs.judged_before import JudgedBefore, write_verdicts
from kernelpro.runs.judged_once import JudgedOnce, Reused
from kernelpro.search.tree import normalised_source
from tests.conftest import candidate, problem

HONEST = candidate("honest_scale_relu")
RESTYLED = "# the same code, laid out anew\n" + HONEST.replace("    def forward(self, x):",
                                                                "    def forward(self, x):\n        '''Fused.'''")
FAULTY = candidate("fault_exception")


class Counting:
    """The real judge, keeping every batch of candidates it is handed."""

    def __init__(self, inner: Evaluator) -> None:
        self.inner, self.batches = inner, []

    @property
    def judged(self) -> list[str]:
        return [source for batch in self.batches for source in batch]

    def judge_many(self, problem: Problem, candidates: Sequence[str],
                   on_verdict: Callable[[int, EvalResult], None] | None = None,
                   until: float | None = None) -> list[EvalResult]:
        self.batches.append(list(candidates))
        return self.inner.judge_many(problem, candidates, on_verdict=on_verdict, until=until)

    def check_many(self, problem: Problem, candidates: Sequence[str]) -> list[EvalResult]:
        return self.inner.check_many(problem, candidates)

    def rejudge(self, problem: Problem, candidates: Sequence[str], until: float | None = None) -> list[EvalResult]:
        return self.inner.rejudge(problem, candidates, until=until)

    def second_opinion(self, problem: Problem, candidate: str, verdict: EvalResult,
                       until: float | None = None) -> SecondOpinion:
        return self.inner.second_opinion(problem, candidate, verdict, until=until)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def judge(settings):
    counting = Counting(evaluator(settings, "cpu"))
    yield counting
    counting.close()


def test_it_is_the_evaluator_port(judge):
    assert isinstance(JudgedOnce(judge), Evaluator)


def test_a_repeat_is_answered_without_the_judge_and_a_different_candidate_is_judged(judge):
    once = JudgedOnce(judge)
    [first] = once.judge_many(problem("scale_relu"), [HONEST], labels=["v1"])
    assert first.status == "ok" and "answered_by" not in first.details and once.reused == {}
    assert judge.judged == [HONEST]

    reached: list[tuple[int, bool]] = []
    repeat, other = once.judge_many(problem("scale_relu"), [RESTYLED, FAULTY], labels=["v2", "v3"],
                                    on_verdict=lambda i, r: reached.append((i, i in once.reused)))
    assert judge.judged == [HONEST, FAULTY]  # the restyled repeat never reached the judge
    assert once.reused == {0: Reused("v1")}
    assert repeat.details.pop("answered_by") == "v1" and repeat == first  # v1's verdict, marked as answered
    assert other.status == "runtime_error" and "answered_by" not in other.details
    assert sorted(reached) == [(0, True), (1, False)]  # the answer handed on too, known as one before it came


def test_the_same_code_twice_in_one_call_is_judged_once(judge):
    once = JudgedOnce(judge)
    assert once.new_codes([HONEST, FAULTY, RESTYLED]) == [[0, 2], [1]]
    honest, faulty, restyled = once.judge_many(problem("scale_relu"), [HONEST, FAULTY, RESTYLED],
                                               labels=["a", "b", "c"])
    assert judge.batches == [[HONEST, FAULTY]]
    assert once.reused == {2: Reused("a")}
    assert restyled.details["answered_by"] == "a" and restyled.speedup == honest.speedup
    assert faulty.status == "runtime_error"
    assert once.new_codes([RESTYLED, FAULTY]) == []  # both known now


def test_a_verdict_taken_before_the_run_answers_the_same_code(judge, tmp_path):
    [earlier] = judge.judge_many(problem("scale_relu"), [HONEST])
    write_verdicts(tmp_path / "baselines.jsonl", [("the compile_default baseline", HONEST, earlier)])
    once = JudgedOnce(judge, JudgedBefore.read(tmp_path / "baselines.jsonl"))
    [answer] = once.judge_many(problem("scale_relu"), [RESTYLED], labels=["v1"])
    assert len(judge.batches) == 1  # only the judgment before the run
    assert once.reused == {0: Reused("the compile_default baseline", before_run=True)}
    assert answer.details.pop("answered_by") == "the compile_default baseline" and answer == earlier


def test_a_verdict_of_the_run_comes_before_one_from_before_it(judge):
    before = EvalResult(status="ok", correct=True, speedup=0.5)
    ours = EvalResult(status="ok", correct=True, speedup=1.5)
    once = JudgedOnce(judge, JudgedBefore({normalised_source(HONEST): (before, "baseline")}))
    once.remember(HONEST, ours, "v1")
    once.remember(RESTYLED, before, "v2")  # the same code: the first verdict on it stands
    [answer] = once.judge_many(problem("scale_relu"), [RESTYLED])
    assert (answer.speedup, once.reused, judge.batches) == (1.5, {0: Reused("v1")}, [])


def test_a_candidate_cut_at_the_deadline_is_no_verdict_to_answer_from(judge):
    once = JudgedOnce(judge)
    cut, twin = once.judge_many(problem("scale_relu"), [HONEST, RESTYLED], until=time.monotonic() - 1)
    assert cut.reason == twin.reason == CUT_AT_DEADLINE and "answered_by" not in twin.details
    assert once.new_codes([RESTYLED]) == [[0]]  # still to be judged
