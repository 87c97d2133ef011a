"""The second opinion on a best: its statistics, its rule (both directions, a best below the memory floor), and its
real fresh process on the CPU, walled in as the judge's worker is."""

from __future__ import annotations

import numpy as np
import pytest

from kernelpro.harness.result import TIMING_DISAGREEMENT, EvalResult, GuardFinding, SecondOpinion
from kernelpro.harness.timing.second_opinion import ask
from kernelpro.harness.timing.second_opinion_stats import bootstrap_ci95, call, disagrees, ratio_of_medians, settle
from tests.conftest import candidate, problem
from tests.harness.test_sandbox_walls import needs

FLOOR = GuardFinding(reason="below_memory_floor", severity="warn", source="dynamic", message="under the floor")

SLEEPER = '''import time

import torch.nn as nn


class ModelNew(nn.Module):
    """Correct, and slow enough that no clock could call it faster than the reference."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        time.sleep(0.003)
        return x.clamp_min(0) * self.scale
'''

PLANTER = '''import torch.nn as nn

TARGET = {target!r}


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        with open(TARGET, "w") as planted:
            planted.write("planted by a candidate")
        return x.clamp_min(0) * self.scale
'''


def faster(speedup: float, ci95: list[float], *guards: GuardFinding) -> EvalResult:
    """A verdict the judge called faster, as a finalist's re-judgment would give it."""
    return EvalResult(status="ok", correct=True, speedup=speedup, speedup_ci95=ci95, speed_verdict="faster",
                      guards=list(guards))


@pytest.fixture
def quick(settings):
    settings.harness.second_opinion = True
    settings.harness.second_opinion_budget_s = 0.3
    settings.harness.second_opinion_rounds = 40
    return settings


def test_the_ratio_of_medians_is_the_reference_median_over_the_candidates():
    assert ratio_of_medians([10, 30, 20, 1000], [5, 5, 10, 10]) == pytest.approx(25 / 7.5)
    with pytest.raises(ValueError, match="not positive"):
        ratio_of_medians([1, 2], [0, 0])


def test_the_bootstrap_interval_holds_the_ratio_and_narrows_with_steady_times():
    rng = np.random.default_rng(1)
    reference = 2000 + rng.normal(0, 200, 200)
    candidate = 1000 + rng.normal(0, 100, 200)
    low, high = bootstrap_ci95(reference, candidate, seed=2)
    assert low < ratio_of_medians(reference, candidate) < high
    assert 1.8 < low and high < 2.2
    steady = bootstrap_ci95([2000] * 50, [1000] * 50, seed=3)
    assert steady == pytest.approx([2.0, 2.0])
    assert bootstrap_ci95(reference, candidate, seed=4) != bootstrap_ci95(reference, candidate, seed=5)


def test_the_bootstrap_needs_paired_rounds():
    with pytest.raises(ValueError, match="paired rounds"):
        bootstrap_ci95([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="paired rounds"):
        bootstrap_ci95([1], [1])


@pytest.mark.parametrize("judged, judged_ci, second, second_ci, expected", [
    (3.92, [3.8, 4.0], 0.97, [0.95, 0.99], True),  # the judge far faster than a plain clock
    (0.90, [0.88, 0.92], 1.50, [1.45, 1.55], True),  # the other way round
    (1.30, [1.10, 1.50], 1.00, [0.95, 1.15], False),  # apart, but the intervals overlap: within the noise
    (1.00, [0.99, 1.01], 1.08, [1.07, 1.09], False),  # disjoint, but less than 10% apart
    (1.29, None, 0.95, [0.94, 0.96], True),  # a figure without an interval stands for itself
])
def test_two_figures_disagree_only_beyond_the_noise(judged, judged_ci, second, second_ci, expected):
    assert disagrees(judged, judged_ci, second, second_ci, margin=0.10) is expected


def test_two_disagreeing_measurements_through_the_module_give_timing_disagreement():
    """A candidate fast only under the judge's clock: the judge said 3.92x, the plain clock sees parity."""
    verdict = faster(3.92, [3.85, 4.0])
    assert verdict.improves
    rng = np.random.default_rng(7)
    opinion = call(verdict, 1000 + rng.normal(0, 10, 60), 1010 + rng.normal(0, 10, 60), 0.10, "test")
    assert opinion.status == "disagree" and opinion.speedup == pytest.approx(0.99, abs=0.02)
    settled = settle(verdict, opinion)
    assert [g.reason for g in settled.guards] == [TIMING_DISAGREEMENT]
    assert "3.92x" in settled.guards[0].message and settled.faster_as_timed and not settled.improves
    assert settled.second_opinion == opinion and verdict.second_opinion is None  # the judge's verdict untouched


def test_a_second_opinion_faster_than_the_judge_disagrees_too():
    verdict = faster(1.10, [1.08, 1.12])
    opinion = call(verdict, [3000] * 30, [1000] * 30, 0.10, "test")
    assert opinion.status == "disagree" and not settle(verdict, opinion).improves


def test_an_agreeing_second_opinion_leaves_the_best_counting():
    verdict = faster(2.0, [1.9, 2.1])
    opinion = call(verdict, [2000, 2050, 1950] * 10, [1000, 1010, 990] * 10, 0.10, "test")
    settled = settle(verdict, opinion)
    assert opinion.agrees and settled.guards == [] and settled.improves


def test_a_best_below_the_memory_floor_counts_only_with_an_agreeing_second_opinion():
    verdict = faster(3.92, [3.8, 4.0], FLOOR)
    assert verdict.faster_as_timed and not verdict.improves  # nothing has confirmed it yet
    missing = settle(verdict, SecondOpinion(status="unavailable", message="switched off"))
    assert not missing.improves and TIMING_DISAGREEMENT not in [g.reason for g in missing.guards]
    agreed = settle(verdict, call(verdict, [3900] * 20, [1000] * 20, 0.10, "test"))
    assert agreed.second_opinion.agrees and agreed.improves
    disputed = settle(verdict, call(verdict, [1000] * 20, [1000] * 20, 0.10, "test"))
    assert not disputed.improves and disputed.guards[-1].reason == TIMING_DISAGREEMENT


def test_a_candidate_that_fails_in_the_fresh_process_does_not_count():
    settled = settle(faster(2.0, [1.9, 2.1]), SecondOpinion(status="failed", message="a timed call raised"))
    assert not settled.improves and "it failed: a timed call raised" in settled.guards[0].message


def test_the_fresh_process_times_both_and_disagrees_with_a_hollow_figure(quick):
    """The real process on the CPU: a slow candidate the verdict claims at 3.92x gets a plain figure far below."""
    opinion = ask(problem("scale_relu"), SLEEPER, faster(3.92, [3.85, 4.0]), "cpu", quick)
    assert opinion.status == "disagree", opinion
    assert opinion.rounds >= quick.harness.second_opinion_min_rounds
    assert opinion.speedup < 1.0 and opinion.speedup_ci95[0] <= opinion.speedup <= opinion.speedup_ci95[1]
    assert opinion.candidate_ms >= 3.0 and "host clock" in opinion.method


def test_switched_off_it_asks_nothing(quick):
    quick.harness.second_opinion = False
    opinion = ask(problem("scale_relu"), candidate("honest_scale_relu"), faster(1.5, [1.4, 1.6]), "cpu", quick)
    assert opinion.status == "unavailable" and "harness.second_opinion" in opinion.message


def test_a_candidate_that_raises_there_fails(quick):
    source = SLEEPER.replace("time.sleep(0.003)", "raise RuntimeError('only under the judge')")
    opinion = ask(problem("scale_relu"), source, faster(2.0, [1.9, 2.1]), "cpu", quick)
    assert opinion.status == "failed" and "only under the judge" in opinion.message


@needs("writes only in its own directory")
def test_the_fresh_process_is_walled_in_as_the_judges_worker(quick, tmp_path):
    target = tmp_path / "planted.txt"
    opinion = ask(problem("scale_relu"), PLANTER.format(target=str(target)), faster(2.0, [1.9, 2.1]), "cpu", quick)
    assert opinion.status == "failed" and not target.exists()
