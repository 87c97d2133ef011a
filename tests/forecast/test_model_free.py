"""The model-free forecaster learns from static features, respects the roofline, saves and loads, and ships with a
fit the gate uses until the user fits one."""

from __future__ import annotations

import numpy as np
import pytest

from kernelpro.app.forecast import forecaster_by_name
from kernelpro.config import Settings
from kernelpro.forecast.dataset import split_by_problem
from kernelpro.forecast.evaluate import evaluate, inputs_for, scored_rows
from kernelpro.forecast.features import Inputs, feature_names, features
from kernelpro.forecast.model_free import ClassPrior, ModelError, ModelFree, roofline_bound
from tests.forecast.helpers import judged_rows


def fitted(rows):
    usable = scored_rows(rows)
    return ModelFree.fit([inputs_for(r) for r in usable], [r.speed_class for r in usable])


def test_the_split_keeps_every_problem_on_one_side():
    rows = judged_rows()
    train, test = split_by_problem(rows, 0.3)
    assert train and test and not {r.problem_hash for r in train} & {r.problem_hash for r in test}
    assert split_by_problem(rows, 0.3) == (train, test)  # seeded


def test_it_beats_the_class_prior_on_held_out_problems():
    train, test = split_by_problem(judged_rows(), 0.3)
    model, prior = evaluate(fitted(train), test)[0], evaluate(ClassPrior([r.speed_class for r in train]), test)[0]
    assert model["failures_left_out"] > 0
    assert model["all"]["accuracy_within_1"] > prior["all"]["accuracy_within_1"]
    assert model["all"]["crps"] < prior["all"]["crps"] and model["all"]["spearman"] > 0.5


def test_the_roofline_caps_the_classes():
    probs = np.full(8, 1 / 8)
    bounded = roofline_bound(probs, headroom=1.5)  # 1.5 x 1.25 slack is class 5
    assert bounded[5:].sum() == 0 and bounded[4] == pytest.approx(4 / 8) and bounded.sum() == pytest.approx(1)
    assert (roofline_bound(probs, None) == probs).all()
    near_floor = Inputs("ref", "cand", reference_ms=2.0, traffic_bytes=4_800_000_000, bandwidth_gbs=4800.0)
    assert near_floor.floor_ms() == pytest.approx(1.0) and near_floor.headroom() == pytest.approx(2.0)
    assert len(features(near_floor)) == len(feature_names())


def test_a_saved_model_loads_to_the_same_forecasts(tmp_path):
    rows = judged_rows(problems=6)
    model = fitted(rows)
    model.save(tmp_path / "m.json")
    again = ModelFree.load(tmp_path / "m.json")
    items = [inputs_for(r) for r in rows[:5]]
    assert np.allclose(model.probabilities(items), again.probabilities(items))
    with pytest.raises(ModelError, match="no fitted forecaster"):
        ModelFree.load(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(ModelError, match="format"):
        ModelFree.load(tmp_path / "bad.json")
    with pytest.raises(ModelError, match="every class"):
        ModelFree.fit([], [])


def test_kernel_statistics_come_from_the_real_compilers(settings):
    from kernelpro.forecast.kernel_stats import kernel_stats
    from tests.conftest import candidate

    cuda, plain = kernel_stats([candidate("honest_cuda_scale_relu"), "import torch\n"], settings.compile)
    assert cuda["max_registers"] > 0 and cuda["spill_bytes"] == 0 and plain == {}
    assert 0 <= cuda.get("wide_load_share", 0) <= 1  # the SASS mix where cuobjdump is installed
    row = features(Inputs("ref", candidate("honest_cuda_scale_relu"), kernel_stats=cuda))
    assert row[feature_names().index("has_kernel_stats")] == 1


def test_candidates_of_degenerate_problems_are_neither_scored_nor_learned_from():
    rows = judged_rows(problems=3, per_problem=3, failures=0)
    rows[0].problem_findings = ["constant_output"]
    report, _ = evaluate(ClassPrior([4]), rows)
    assert report["failures_left_out"] == 1 and report["degenerate_left_out"] == 1 and report["all"]["n"] == 8
    assert rows[0] not in scored_rows(rows)


def test_the_shipped_fit_loads_with_the_features_this_version_computes():
    """When the features change, this fails until the shipped fit is made again (``model_free.BUILTIN``)."""
    model = ModelFree.builtin()
    assert model.names == feature_names() and model.trained_on >= 150
    assert model.name == f"model_free built-in, {model.trained_on} H200 candidates"
    forecast = model.forecast([inputs_for(r) for r in scored_rows(judged_rows())[:3]])
    assert len(forecast) == 3 and all(abs(sum(f.probabilities) - 1) < 1e-6 for f in forecast)


def test_the_gate_uses_the_shipped_fit_until_the_user_fits_one(tmp_path):
    settings = Settings()
    if settings.forecast.model_path.expanduser().is_file():
        pytest.skip("this machine has a fit of its own at the default path")
    assert forecaster_by_name(settings, "model_free").name.startswith("model_free built-in")
    settings.forecast.model_path = tmp_path / "mine.json"  # a path the user chose must hold a fit
    with pytest.raises(ModelError, match="no fitted forecaster"):
        forecaster_by_name(settings, "model_free")
    fitted(judged_rows()).save(settings.forecast.model_path)
    assert forecaster_by_name(settings, "model_free").name == "model_free"
