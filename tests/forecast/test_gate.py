"""The forecast gate on its own: ranking within an expansion, deferrals, thresholds, a broken forecaster."""

from __future__ import annotations

from kernelpro.forecast.classes import from_probabilities, uniform
from kernelpro.forecast.gate import ForecastGate
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
