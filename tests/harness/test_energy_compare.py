"""The energy comparison's arithmetic: paired ratios, their interval, the replay check and the caps."""

from __future__ import annotations

import math

import pytest

from kernelpro.harness.timing.energy import EnergyReading, cap_reasons
from kernelpro.harness.timing.energy_compare import compare, paired_ratio


def _reading(joules: float, seconds_per_call: float, capped: list[str] | None = None) -> EnergyReading:
    calls = 1000
    return EnergyReading(joules_per_call=joules, average_watts=joules / seconds_per_call, calls=calls,
                         seconds=seconds_per_call * calls, capped=capped or [])


def test_a_steady_saving_is_called_less_with_its_truth_inside_the_interval():
    reference = [1.00, 1.02, 0.99, 1.01, 1.00, 0.98]
    candidate = [r / 1.25 for r in [1.01, 1.00, 1.00, 0.99, 1.02, 0.99]]
    result = paired_ratio(reference, candidate, min_effect=0.02)
    assert result.verdict == "less" and result.low <= 1.25 * 0.99 and result.high >= 1.24
    logs = [math.log(r / c) for r, c in zip(reference, candidate, strict=True)]
    assert result.ratio == pytest.approx(math.exp(sum(logs) / len(logs)))


def test_identical_readings_are_the_same_and_noise_is_uncertain():
    assert paired_ratio([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], 0.02).verdict == "same"
    noisy = paired_ratio([1.0, 1.3, 0.8, 1.2], [1.2, 0.9, 1.1, 0.8], 0.02)
    assert noisy.verdict == "uncertain" and noisy.low < 1.0 < noisy.high
    assert paired_ratio([1.0], [0.5], 0.02).verdict == "uncertain"  # one pair: no interval to call on


def test_edp_multiplies_energy_and_time_per_call_of_the_same_reading():
    readings = {"reference": [_reading(2.0, 0.001)] * 4, "candidate": [_reading(1.0, 0.002)] * 4}
    result = compare(readings, {"reference": 1.0, "candidate": 2.0}, 0.02)
    assert result.energy.ratio == pytest.approx(2.0) and result.energy.verdict == "less"
    assert result.edp.ratio == pytest.approx(1.0) and result.edp.verdict == "same"
    assert not result.replayed and not result.capped


def test_a_candidate_far_faster_on_the_repeated_input_than_when_timed_is_not_trusted():
    """Timed on fresh inputs: same speed as the reference. On the readings' one input set: 50x faster (a memo)."""
    readings = {"reference": [_reading(1.0, 0.001)] * 4, "candidate": [_reading(0.02, 0.00002)] * 4}
    result = compare(readings, {"reference": 1.0, "candidate": 1.0}, 0.02)
    assert result.replayed and result.energy.verdict == "uncertain" and result.edp.verdict == "uncertain"


def test_a_capped_reading_is_marked():
    readings = {"reference": [_reading(1.0, 0.001, ["sw_power_cap"])] + [_reading(1.0, 0.001)] * 3,
                "candidate": [_reading(1.0, 0.001)] * 4}
    assert compare(readings, {"reference": 1.0, "candidate": 1.0}, 0.02).capped


def test_nvml_cap_bits_are_named_and_idle_bits_are_not_caps():
    assert cap_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal"]
    assert cap_reasons(0x1 | 0x2) == []  # GPU idle, application clocks setting
