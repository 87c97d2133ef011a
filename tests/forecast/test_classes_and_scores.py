"""One class definition, and every score against values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernelpro.forecast.classes import (
    BOUNDARIES,
    CLASS_SPEEDUP,
    class_interval,
    confidence,
    from_probabilities,
    speedup_class,
)
from kernelpro.forecast.scores import (
    aurc,
    ece,
    half_brier,
    nll,
    ordinal_crps,
    risk_coverage,
    score_forecasts,
    spearman,
    speedup_recovered,
)


def test_classes_have_the_published_boundaries():
    assert [round(b, 3) for b in BOUNDARIES] == [0.5, 0.707, 1.0, 1.414, 2.0, 2.828, 4.0]
    assert [speedup_class(s) for s in (0.1, 0.49, 0.5, 0.7, 0.99, 1.0, 1.4, 1.5, 2.0, 3.0, 4.0, 50)] == \
        [1, 1, 2, 2, 3, 4, 4, 5, 6, 7, 8, 8]
    assert [speedup_class(s) for s in (None, 0.0, -1.0, math.nan)] == [0, 0, 0, 0]
    for cls in range(1, 9):
        low, high = class_interval(cls)
        assert speedup_class(CLASS_SPEEDUP[cls - 1]) == cls and low <= CLASS_SPEEDUP[cls - 1] < high
    with pytest.raises(ValueError):
        class_interval(0)


def test_probabilities_are_renormalised_and_a_zero_sum_is_a_parse_failure():
    f = from_probabilities([0, 0, 1, 2, 1, 0, 0, 0], predicted=4, reasoning="r")
    assert f.probabilities[3] == 0.5 and f.raw_sum == 4 and not f.parse_failure and f.predicted == 4
    assert from_probabilities([0, 0, 0, 3, -1, float("nan"), 0, 0]).probabilities[3] == 1.0
    for bad in ([0] * 8, [0.5] * 7, []):
        failed = from_probabilities(bad)
        assert failed.parse_failure and failed.probabilities == [0.125] * 8
    assert from_probabilities([1, 0, 0, 0, 0, 0, 0, 0], predicted=12).predicted == 1  # out of range: the top


def test_scores_match_hand_computed_values():
    certain = np.eye(8)[[3]]
    assert half_brier(certain, np.array([4]))[0] == 0 and ordinal_crps(certain, np.array([4]))[0] == 0
    assert half_brier(certain, np.array([5]))[0] == 1.0  # 0.5 * (1 + 1)
    assert ordinal_crps(certain, np.array([6]))[0] == pytest.approx(2 / 7)  # F(4) and F(5) are 1, the step 0
    assert ordinal_crps(certain, np.array([6]))[0] > ordinal_crps(certain, np.array([5]))[0]  # ordinal: nearer is less
    flat = np.full((1, 8), 1 / 8)
    assert nll(flat, np.array([2]))[0] == pytest.approx(math.log(8))
    assert confidence(flat[0], "margin") == 0 and confidence(flat[0], "neg_entropy") == pytest.approx(-math.log(8))


def test_ece_and_risk_coverage():
    probs = np.array([[0.9] + [0.1 / 7] * 7, [0.6, 0.4] + [0] * 6])
    truth = np.array([1, 2])  # the confident one right, the other wrong
    assert ece(probs, truth) == pytest.approx(0.5 * 0.1 + 0.5 * 0.6)
    coverage, risk = risk_coverage(probs, truth, "max_prob")
    assert coverage.tolist() == [0.5, 1.0] and risk.tolist() == [0.0, 0.5]
    assert aurc(probs, truth, "max_prob") == 0.25


def test_speedup_recovered_and_spearman():
    probs = np.eye(8)[[7, 3, 0, 5]]
    speedups = np.array([3.0, 1.2, 0.4, 6.0])
    assert speedup_recovered(probs, speedups, 0.25) == 0.5  # its top pick made 3x of the best 6x
    assert speedup_recovered(probs, speedups, 0.5) == 1.0
    flat = np.full((4, 8), 1 / 8)  # no ranking at all: the expectation over random picks, whatever the row order
    assert speedup_recovered(flat, speedups, 0.25) == pytest.approx((3.0 + 1.2 + 0.4 + 6.0) / 4 / 6.0)
    assert speedup_recovered(flat, speedups[::-1].copy(), 0.25) == speedup_recovered(flat, speedups, 0.25)
    # two of four drawn: the best is missed only when both picks are among the other three (3 of 6 pairs)
    assert speedup_recovered(flat, speedups, 0.5) == pytest.approx((3 * 1.0 + 2 * 3.0 / 6 + 1 * 1.2 / 6) / 6)
    assert spearman(np.array([1.0, 2, 3]), np.array([10.0, 20, 30])) == pytest.approx(1.0)
    assert spearman(np.array([1.0, 2, 3]), np.array([3.0, 2, 1])) == pytest.approx(-1.0)


def test_parse_failures_are_scored_as_uniform_and_also_left_out():
    good = from_probabilities([0, 0, 0, 1, 0, 0, 0, 0])
    failed = from_probabilities([0] * 8)
    report = score_forecasts([good, failed, good], truth=[4, 4, 0], speedups=[1.2, 1.1, None])
    assert report["failures_left_out"] == 1 and report["parse_failures"] == 1
    assert report["all"]["n"] == 2 and report["parsed"]["n"] == 1
    assert report["parsed"]["half_brier"] == 0 and report["all"]["half_brier"] > 0
