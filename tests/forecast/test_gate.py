"""The forecast gate on its own: ranking within an expansion, deferrals, thresholds, a broken forecaster."""

from __future__ import annotations

import math

import pytest

from kernelpro.app import forecast as app_forecast
from kernelpro.forecast import gate as gate_module
from kernelpro.forecast.classes import CLASS_SPEEDUP, from_probabilities, uniform
from kernelpro.forecast.gate import ForecastGate
from kernelpro.forecast.objective_reward import predicted_reward
from kernelpro.harness.ports import Proposal
from kernelpro.problem import Problem

PROBLEM = Problem(name="p", source="class Model: ...")
ONE_HOT = {c: [1.0 if b == c else 0.0 for b in range(1, 9)] for c in range(1, 9)}


class Fixed:
    """Forecasts written in the candidates' source: ``# class N``, ``# defer`` or ``# unsure``."""

    name = "fixed"

    def forecast(self, items):
        out = []
        for item in items:
            tag = item.candidate_source.rsplit("# ", 1)[-1]
            out.append(uniform(deferred=True) if tag == "defer" else from_probabilities([1] * 8) if tag == "unsure"
                       else from_probabilities(ONE_HOT[int(tag.split()[1])]))
        return out


class Broken:
    name = "broken"

    def forecast(self, items):
        raise RuntimeError("no model")


def proposals(*tags: str, parent: str = "r", idea: str = "fuse") -> list[Proposal]:
    return [Proposal(variant_id=f"{parent}-{idea}-{i}", parent_id=parent, idea=idea, source=f"# {t}")
            for i, t in enumerate(tags)]


def test_select_keeps_the_top_k_of_each_expansion_and_a_deferral_first():
    batch = proposals("class 2", "class 6", "class 4") + proposals("class 1", "defer", idea="tile")
    gate = ForecastGate(Fixed(), "select", select_k=1)
    assert gate.choose(PROBLEM, batch) == ["r-fuse-1", "r-tile-1"]
    assert "expected class 2.00" in gate.why("r-fuse-0") and gate.why("r-fuse-1") == ""
    assert ForecastGate(Fixed(), "select", select_k=2).choose(PROBLEM, batch[:3]) == ["r-fuse-1", "r-fuse-2"]


def test_selective_measures_only_what_it_is_unsure_of():
    batch = proposals("class 7", "unsure", "defer", "class 3")
    gate = ForecastGate(Fixed(), "selective", threshold=0.9)
    assert gate.choose(PROBLEM, batch) == ["r-fuse-1", "r-fuse-2"]
    assert "accepted as forecast, class 7" in gate.why("r-fuse-0")
    margin = ForecastGate(Fixed(), "selective", confidence="margin", threshold=1.0)
    assert margin.choose(PROBLEM, batch) == ["r-fuse-1", "r-fuse-2"]


def test_a_broken_forecaster_measures_everything():
    batch = proposals("class 2", "class 6")
    gate = ForecastGate(Broken(), "select")
    assert gate.choose(PROBLEM, batch) == [p.variant_id for p in batch] and gate.forecasts == {}


def test_the_report_says_what_the_gate_skipped_and_saved():
    from datetime import datetime, timezone

    from kernelpro.report.content import overview
    from kernelpro.report.summary import RunSummary
    from kernelpro.search.tree import VariantTree

    run = RunSummary(run_id="r", problem="p", device="cuda", idea_source="llm", status="completed",
                     started_at=datetime.now(timezone.utc), gate="forecast-select (model_free)", gate_skipped=6,
                     gate_saved_s=12.5)
    assert ("Gate", "forecast-select (model_free): 6 candidate(s) not measured, about 12.5 s of judging saved") \
        in overview(run, VariantTree.with_root(PROBLEM.source))
    assert "Gate" not in dict(overview(run.model_copy(update={"gate": "measure_all"}),
                                       VariantTree.with_root(PROBLEM.source)))


class WithEnergy(Fixed):
    """``# class N energy E``: a speed class and the forecaster's own energy ratio."""

    def forecast(self, items):
        out = []
        for item in items:
            _, cls, _, energy = item.candidate_source.rsplit("# ", 1)[-1].split()
            out.append(from_probabilities(ONE_HOT[int(cls)]).model_copy(update={"energy_ratio": float(energy)}))
        return out


def test_a_speed_forecast_under_energy_assumes_equal_power():
    fast = from_probabilities(ONE_HOT[6])
    log_speedup = math.log(CLASS_SPEEDUP[5])
    assert predicted_reward(fast, "time") == pytest.approx(log_speedup)
    assert predicted_reward(fast, "energy") == pytest.approx(log_speedup)  # energy ratio = time ratio
    assert predicted_reward(fast, "edp") == pytest.approx(2 * log_speedup)  # EDP ratio = time ratio squared
    lean = fast.model_copy(update={"energy_ratio": 1.5})
    assert predicted_reward(lean, "energy") == pytest.approx(math.log(1.5))
    assert predicted_reward(lean, "edp") == pytest.approx(math.log(1.5) + log_speedup)
    with pytest.raises(ValueError, match="unknown objective"):
        predicted_reward(fast, "watts")


@pytest.mark.parametrize("objective", ["time", "energy", "edp"])
def test_the_gate_ranks_by_the_objectives_predicted_reward(objective, monkeypatch):
    asked = []
    real = gate_module.predicted_reward
    monkeypatch.setattr(gate_module, "predicted_reward", lambda f, o: asked.append(o) or real(f, o))
    gate = ForecastGate(Fixed(), "select", select_k=1, objective=objective)
    assert gate.choose(PROBLEM, proposals("class 2", "class 6", "class 4")) == ["r-fuse-1"]  # the speed order
    assert asked and set(asked) == {objective}
    figure = {"time": "speedup 0.59x", "energy": "energy ratio 0.59x", "edp": "EDP ratio 0.35x"}[objective]
    assert f"predicted {figure}, below the 1 measured" in gate.why("r-fuse-0")
    if objective == "time":
        assert gate.ranking == "ranked by predicted speed"
    else:
        assert gate.ranking == f"ranked by predicted speed; under {objective} this assumes equal power (" + \
            ("energy ratio = time ratio)" if objective == "energy" else "EDP ratio = time ratio squared)")


def test_a_forecasts_own_energy_prediction_decides_under_energy_and_edp():
    batch = proposals("class 6 energy 0.5", "class 4 energy 2.0")
    assert ForecastGate(WithEnergy(), "select", objective="time").choose(PROBLEM, batch) == ["r-fuse-0"]
    for objective in ("energy", "edp"):
        gate = ForecastGate(WithEnergy(), "select", objective=objective)
        assert gate.choose(PROBLEM, batch) == ["r-fuse-1"]  # faster, but hungrier: not the energy pick
        assert "the forecasts' predicted energy ratio" in gate.ranking


def test_the_run_builds_its_gate_for_its_objective(settings, monkeypatch):
    monkeypatch.setattr(app_forecast, "forecaster_by_name", lambda *a, **k: Fixed())
    settings.forecast.gate = "select"
    settings.search.objective = "edp"
    gate = app_forecast.build_gate(settings, "cpu")
    assert gate.objective == "edp" and "assumes equal power" in gate.ranking
