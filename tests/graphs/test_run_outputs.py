"""Why a run that found no improvement found none, in the words the user reads; what a suite scores it by."""

from __future__ import annotations

from kernelpro.graphs.run_outputs import _no_improvement_reason, _scoring_facts
from kernelpro.harness.result import EvalResult, Timing
from kernelpro.search.tree import VariantTree
from tests.conftest import problem


def _verdict(speedup: float, contended: bool) -> EvalResult:
    timing = Timing(median_ms=1.0, p10_ms=0.98, p90_ms=1.02, mean_ms=1.0, trials=20, method="cpu perf_counter_ns")
    return EvalResult(status="ok", correct=True, speedup=speedup, speedup_ci95=[speedup * 0.97, speedup * 1.03],
                      speed_verdict="faster" if speedup > 1.05 else "slower", contended=contended,
                      candidate=timing, reference=timing, device="cpu")


def _tree(*verdicts: EvalResult) -> VariantTree:
    tree = VariantTree.with_root(problem("scale_relu").source)
    for n, result in enumerate(verdicts):
        tree.spawn(tree.root.id, f"# candidate {n}\n", f"idea {n}", "llm", 1).record(result)
    return tree


def test_a_run_timed_only_on_a_busy_machine_says_that_nothing_could_count():
    reason = _no_improvement_reason(_tree(_verdict(1.4, True), _verdict(0.5, True)))
    assert "every one was timed while other programs competed for the CPU" in reason
    assert "run again on a quiet machine" in reason


def test_a_run_partly_timed_on_a_busy_machine_says_how_many():
    reason = _no_improvement_reason(_tree(_verdict(0.6, False), _verdict(1.4, True)))
    assert reason.endswith("; 1 of them timed while other programs competed for the CPU")


def test_a_quiet_run_without_a_faster_candidate_says_only_that():
    reason = _no_improvement_reason(_tree(_verdict(0.6, False)))
    assert reason.startswith("1 correct candidate(s), none measurably faster") and "competed" not in reason


def test_whether_the_reference_is_host_bound_is_what_most_of_the_run_s_timed_verdicts_say():
    def timed(host_bound: bool | None) -> EvalResult:
        return _verdict(1.2, False).model_copy(update={"host_bound": host_bound})

    untimed = EvalResult(status="incorrect", reason="value_mismatch")
    assert _scoring_facts(_tree(timed(True), timed(None), untimed), None)["reference_host_bound"] is True
    assert _scoring_facts(_tree(timed(True), timed(False)), None)["reference_host_bound"] is False  # a tie is not
    assert _scoring_facts(_tree(untimed), None)["reference_host_bound"] is None
