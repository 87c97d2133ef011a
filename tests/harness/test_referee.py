"""The referee: the verdict decided in processes the candidate never runs in, whatever the candidate's own
process says. Real processes throughout (the referee and one per model), on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpro.harness.jobs import make_job
from kernelpro.harness.judge import judge
from kernelpro.harness.referee.run import run_referee, start_referee, with_referee
from kernelpro.harness.referee.timing import Outside, timer_check
from kernelpro.harness.result import EvalResult
from kernelpro.harness.timing.scorecards import kernelbench_score
from kernelpro.problem import parse_problem
from tests.conftest import DATA, candidate, problem


def referee_candidate(name: str) -> str:
    return (DATA / "referee" / f"{name}.py").read_text()


def referee_report(source: str, settings, problem_name: str = "scale_relu", timing: bool = True):
    job = make_job(problem(problem_name), source, "cpu", settings, timing)
    return run_referee(job, settings.harness)


def forged_ok() -> EvalResult:
    """What a candidate that took over its own worker's result channel would have it say."""
    return EvalResult(status="ok", correct=True, speedup=42.0, speedup_ci95=[41.0, 43.0], speed_verdict="faster",
                      message="forged", trials_checked=6)


def test_an_honest_candidate_is_confirmed_with_the_referees_own_speed(settings):
    outcome = referee_report(candidate("honest_scale_relu"), settings)
    assert outcome.report["status"] == "ok", outcome
    assert outcome.report["sets_checked"] == settings.harness.referee_trials + 1  # and the shifted set
    low, high = outcome.report["speedup_ci95"]
    assert low <= outcome.report["speedup"] <= high
    result = with_referee(forged_ok(), outcome)
    assert result.status == "ok" and result.speedup == outcome.report["speedup"]
    assert result.details["worker_timing"]["speedup"] == 42.0  # kept beside, never the verdict's
    assert "each model in a process of its own" in result.candidate.method
    kernelbench = result.kernelbench  # the same rounds read in KernelBench's convention, labelled as such
    assert kernelbench.method.startswith("host clock, mean") and kernelbench.rounds >= 3
    assert kernelbench.speedup_ci95[0] <= kernelbench.speedup <= kernelbench.speedup_ci95[1]


def test_a_forged_ok_from_the_candidates_own_process_is_overturned(settings):
    """Whatever the worker's channel carried, a candidate that computes nothing is incorrect."""
    result = with_referee(forged_ok(), referee_report(referee_candidate("zeros"), settings))
    assert (result.status, result.correct, result.speedup) == ("incorrect", False, None)
    assert "referee's input set 1" in result.message
    assert result.details["worker_verdict"]["speedup"] == 42.0


def test_global_state_changed_in_the_candidates_process_reaches_neither_reference_nor_comparison(settings):
    """Default dtype, backend flags, threads and a global hook zeroing every module's output: in the candidate's
    process only. The reference and the comparison, elsewhere, see its zeros for what they are."""
    outcome = referee_report(referee_candidate("global_state"), settings)
    assert outcome.report["status"] == "incorrect", outcome


def test_a_clock_that_under_reports_in_the_candidates_process_is_a_timer_mismatch(settings):
    outcome = referee_report(referee_candidate("clock_liar"), settings)
    assert (outcome.report["status"], outcome.report["reason"]) == ("rejected", "timer_mismatch"), outcome
    result = with_referee(forged_ok(), outcome)
    assert result.status == "rejected" and any(g.reason == "timer_mismatch" for g in result.guards)


def test_a_timer_mismatch_seen_once_is_timed_again_and_the_second_timing_decides(settings):
    """An excess in one timing alone is what a burst of the host's other work looks like: the honest figures of
    the second timing stand, and the report says the timing was repeated and why."""
    settings.harness.warmup, settings.harness.min_timing_trials, settings.harness.timing_trials = 2, 8, 8
    outcome = referee_report(referee_candidate("first_timing_liar"), settings)
    assert outcome.report["status"] == "ok", outcome
    assert outcome.report["timer_rechecked"].startswith("timed again, and passed, after: the candidate's own clock")
    assert outcome.report["speedup_ci95"][1] < 1.0  # its honest 20 ms, not the fiftieth it claimed at first


def test_the_clock_liars_honest_twin_is_confirmed_and_slower(settings):
    outcome = referee_report(referee_candidate("slow_honest"), settings)
    assert outcome.report["status"] == "ok", outcome
    assert outcome.report["speedup_ci95"][1] < 1.0


def test_a_candidate_that_replays_its_first_output_fails_on_the_referees_fresh_inputs(settings):
    outcome = referee_report(referee_candidate("replay"), settings)
    assert outcome.report["status"] in ("incorrect", "rejected"), outcome


def test_a_joined_thread_pool_stays_accepted(settings):
    outcome = referee_report(candidate("honest_own_threads"), settings)
    assert outcome.report["status"] == "ok", outcome


def test_bytes_forged_onto_every_descriptor_of_the_candidates_process_decide_nothing(settings):
    """A fake verdict written to each of its file descriptors, the pipes to the referee among them, then exit."""
    result = with_referee(forged_ok(), referee_report(candidate("cheat_forged_result"), settings))
    assert result.status in ("rejected", "runtime_error") and result.speedup is None, result.message


def test_a_candidate_whose_process_exits_gets_no_verdict_but_its_failure(settings):
    result = with_referee(forged_ok(), referee_report(candidate("fault_os_exit"), settings))
    assert (result.status, result.reason) == ("runtime_error", "exited")


def test_processes_started_before_their_job_wait_for_it_and_judge_it_or_die_unused(settings):
    """``harness.referee_prestart``: the three processes start with no job (no candidate code, no sources), wait,
    judge the job given later as they would have from the start, and are killed unused otherwise."""
    import psutil

    waiting = start_referee(settings.harness)
    processes = [psutil.Process(proc.pid) for proc in waiting.processes]
    assert len(processes) == 3 and all(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in processes)
    job = make_job(problem("scale_relu"), candidate("honest_scale_relu"), "cpu", settings, True)
    outcome = run_referee(job, settings.harness, waiting)
    assert outcome.report["status"] == "ok", outcome
    assert waiting.taken and not any(proc.poll() is None for proc in waiting.processes)

    unused = start_referee(settings.harness)
    unused.discard()
    assert all(proc.poll() is not None for proc in unused.processes)
    assert not any(Path(d).exists() for d in unused.directories)
    unused.discard()  # a second time: nothing left to do


def test_a_correctness_only_judgment_is_confirmed_without_timing(settings):
    outcome = referee_report(candidate("honest_scale_relu"), settings, timing=False)
    assert outcome.report["status"] == "ok" and "speedup" not in outcome.report


@pytest.mark.parametrize("on", [True, False])
def test_the_judge_decides_through_the_referee_unless_switched_off(settings, on):
    settings.harness.referee = on
    result = judge(problem("scale_relu"), candidate("honest_scale_relu"), "cpu", settings)
    assert result.status == "ok", result.message
    assert ("referee" in result.details) is on
    if on:
        assert result.speedup == result.details["referee"]["speedup"]
        assert result.details["worker_timing"]["speedup"] is not None


def calls(added_ms: list[float], host_ms: float = 1.0, gap_ms: float | None = None) -> list[Outside]:
    return [Outside(host_ms + a, host_ms, None if gap_ms is None else host_ms - gap_ms) for a in added_ms]


NOISY = [0.11, 0.09, 0.13, 0.1, 0.12, 0.08, 0.1, 0.3, 0.1, 0.11]  # one slow round among them


def test_a_claim_that_fits_the_outside_time_passes_whatever_the_noise():
    assert timer_check({("reference", "time"): calls(NOISY), ("candidate", "time"): calls(NOISY[::-1])},
                       0.05, 0.02) is None


def test_a_steady_under_report_beyond_the_noise_is_found():
    under = [a + 0.5 for a in NOISY]  # half a millisecond a call more from outside than claimed
    why = timer_check({("reference", "time"): calls(NOISY), ("candidate", "time"): calls(under)}, 0.05, 0.02)
    assert why and "claimed 1 ms a time call" in why


def test_an_under_report_inside_the_allowance_is_not_called():
    slight = [a + 0.01 for a in NOISY]
    assert timer_check({("reference", "time"): calls(NOISY), ("candidate", "time"): calls(slight)},
                       0.05, 0.02) is None


def test_work_both_processes_do_around_a_gpu_call_does_not_widen_the_allowance():
    """On a GPU each call's outside time holds the L2 flush and the output's copy (a millisecond here, alike for
    both models): a quarter of it would hide a whole 0.15 ms kernel claimed at a fiftieth. The share is of the
    processes' empty round trip there."""
    around = [1.0 + n / 100 for n in NOISY]  # flush, copy and pipe around every call
    ref = calls(around, host_ms=0.15, gap_ms=0.01)
    liar = calls([a + 0.147 for a in around], host_ms=0.003, gap_ms=0.0002)  # claims 0.003 ms of 0.15 ms
    honest = calls(around[::-1], host_ms=0.15, gap_ms=0.01)
    outside = {("reference", "time"): ref, ("candidate", "time"): liar}
    assert timer_check(outside, 0.1, 0.02) is None  # a quarter of the whole addition: the liar hides in it
    assert "claimed 0.003 ms" in timer_check(outside, 0.1, 0.02, round_trip_ms=0.06)
    assert timer_check({("reference", "time"): ref, ("candidate", "time"): honest}, 0.1, 0.02, 0.06) is None


def test_a_gpu_span_that_falls_short_of_its_host_time_is_found():
    ref = calls([0.1] * 8, host_ms=1.0, gap_ms=0.05)
    cand = calls([0.1] * 8, host_ms=1.0, gap_ms=0.9)  # a span of a tenth of its host time
    why = timer_check({("reference", "time"): ref, ("candidate", "time"): cand}, 0.05, 0.02)
    assert why and "GPU span" in why


def test_kernelbenchs_convention_is_the_ratio_of_means_with_a_paired_interval():
    score = kernelbench_score([2.0, 2.0, 2.0, 8.0], [1.0, 1.0, 1.0, 1.0], on_gpu=True)
    assert score.speedup == pytest.approx(3.5)  # the mean: the slow round counts, as it does there
    assert score.speedup_ci95[0] <= 3.5 <= score.speedup_ci95[1] and "L2 flush" in score.method
    assert kernelbench_score([1.0, 1.0], [1.0, 1.0], on_gpu=True) is None  # too few rounds to say


DTYPE_ARGUMENT = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, x):
        return (x * 2).to(self.dtype)


def get_inputs():
    return [torch.randn(8)]


def get_init_inputs():
    return [torch.float32]
"""


def test_a_problem_whose_values_cannot_cross_keeps_the_workers_verdict_and_says_so(settings):
    """A torch.dtype among get_init_inputs() is no plain value: the referee cannot pass it on, which is the
    problem's doing, never the candidate's."""
    settings.harness.referee = True
    source = DTYPE_ARGUMENT.replace("class Model(", "class ModelNew(")
    result = judge(parse_problem(DTYPE_ARGUMENT, "dtype_argument"), source, "cpu", settings)
    assert result.status == "ok", result.message
    assert result.details["referee"]["status"] == "unavailable"
    assert [g.reason for g in result.guards if g.severity == "warn"] == ["referee_unavailable"]
