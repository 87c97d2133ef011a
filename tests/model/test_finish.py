"""The winners of a suite spliced into the model and judged end to end by the real judge (CPU)."""

import json
import math
from pathlib import Path

from kernelpro.model.finish import finish
from kernelpro.model.plan import ModelPlan
from kernelpro.model.prepare import prepare
from kernelpro.model.report import summary, write_report
from kernelpro.model.suite_child import outcomes
from kernelpro.model.verify import predicted_gain
from kernelpro.search.module_copy import copy_class
from kernelpro.suite.layout import SuiteConfig, create_suite
from kernelpro.suite.sources import ProblemRef
from tests.model.helpers import mlp


def _suite_with(plan: ModelPlan, winners: dict[str, str]) -> str:
    """A suite over the plan's problems as its ledger stands after a run: ``winners`` (region -> best source)
    improved, the rest kept their reference."""
    entries = plan.extracted()
    refs = [ProblemRef(key=Path(e.problem).stem, path=e.problem) for e in entries]
    paths, ledger = create_suite(plan.suites_dir, SuiteConfig(sources=[str(plan.problems_dir)], device="cpu"), refs)
    for entry, ref in zip(entries, refs, strict=True):
        if entry.region.name in winners:
            best = plan.directory / f"best_{ref.key}.py"
            best.write_text(winners[entry.region.name])
            result = {"improved": True, "best_speedup": 1.5, "best_speedup_ci95": [1.4, 1.6],
                      "best_candidate": str(best)}
        else:
            result = {"improved": False, "no_improvement_reason": "none faster than the reference"}
        ledger.update(ref.key, state="done", result=result)
    return paths.suite_id


def test_a_fitting_winner_is_spliced_and_judged_end_to_end_and_a_wrong_one_is_left_out(tmp_path, settings):
    settings.harness.timing_trials = settings.harness.min_timing_trials = 5
    settings.harness.correctness_trials = 2
    plan = prepare(mlp(), tmp_path / "run", "cpu", top=3, repeats=1)
    blocks = [e for e in plan.extracted() if e.region.name.startswith("blocks")]
    assert len(blocks) == 2
    fitting, wrong = blocks
    own = copy_class(Path(fitting.problem).read_text(), "Model", "ModelNew").code
    other = copy_class(Path(wrong.problem).read_text(), "Model", "ModelNew").code.replace("torch.relu(", "torch.tanh(")
    plan.suite_id = _suite_with(plan, {fitting.region.name: own, wrong.region.name: other})
    outcome = finish(plan, outcomes(plan.suites_dir, plan.suite_id), "completed", settings)

    rows = {row.name: row for row in outcome.regions}
    assert rows[fitting.region.name].spliced and rows[fitting.region.name].measured_gain is not None
    assert not rows[wrong.region.name].spliced and "incorrect" in rows[wrong.region.name].note
    assert outcome.status == "completed" and outcome.end_to_end.status == "ok" and outcome.end_to_end.correct
    assert math.isclose(outcome.predicted, predicted_gain([(fitting.share, 1.5)]))
    assert "OriginalModel" in outcome.patched_model.read_text()

    report = write_report(plan, outcome)
    assert f"`{fitting.region.name}`" in report.read_text() and "Amdahl" in report.read_text()
    line = json.loads(json.dumps(summary(plan, outcome)))
    assert {"status", "regions", "end_to_end_speedup", "end_to_end_ci95", "end_to_end_correct", "report"} <= set(line)
    assert line["end_to_end_correct"] is True and line["report"] == str(report)
    assert {(r["name"], r["spliced"]) for r in line["regions"]} >= {(fitting.region.name, True),
                                                                     (wrong.region.name, False)}
    assert all({"share", "best", "spliced"} <= set(r) for r in line["regions"])


def test_no_winner_leaves_the_model_as_it_is(tmp_path, settings):
    plan = prepare(mlp(), tmp_path / "run", "cpu", top=1, repeats=1)
    plan.suite_id = _suite_with(plan, {})
    outcome = finish(plan, outcomes(plan.suites_dir, plan.suite_id), "completed", settings)
    assert outcome.status == "no_improvement" and outcome.end_to_end is None and outcome.patched_model is None
    line = summary(plan, outcome)
    assert line["end_to_end_speedup"] is None and line["regions"][0]["spliced"] is False
    assert ModelPlan.load(plan.directory).regions[0].region == plan.regions[0].region
