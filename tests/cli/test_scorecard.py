"""`--scorecard kernelpro|kernelbench` on eval, optimize and suite run: refused when unknown, kept by a suite with
its settings, and eval's verdict showing the speedup in both scorecards."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernelpro.cli import app
from kernelpro.cli import eval as eval_cli
from kernelpro.cli.inputs import SCORECARD_ENV
from kernelpro.cli.suite_options import create_from_options
from kernelpro.exit_codes import BAD_INPUT
from kernelpro.suite.layout import SuiteConfig
from tests.conftest import DATA
from tests.search.test_objective import timing
from tests.search.test_scorecard import kernelbench, scored

runner = CliRunner()
PROBLEM = DATA / "problems" / "scale_relu.py"
CANDIDATE = DATA / "candidates" / "honest_scale_relu.py"


@pytest.mark.parametrize("command", [["eval", str(PROBLEM), str(CANDIDATE)], ["optimize", str(PROBLEM)],
                                     ["suite", "run", str(PROBLEM)]])
def test_an_unknown_scorecard_is_refused_before_anything_runs(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*command, "--device", "cpu", "--scorecard", "fastest",
                                 *(["--runs-dir", str(tmp_path / "runs")] if command[0] != "eval" else [])])
    assert result.exit_code == BAD_INPUT
    assert "--scorecard 'fastest': use one of kernelpro, kernelbench" in " ".join(result.output.split())
    assert not (tmp_path / "runs").exists()


def test_a_suite_keeps_its_scorecard_with_its_settings(settings, tmp_path, monkeypatch):
    monkeypatch.setenv(SCORECARD_ENV, "kernelpro")  # put back after the test, whatever the suite sets
    paths, ledger = create_from_options([PROBLEM], [], None, "cpu", None, None, 1, None, None, None, None,
                                        tmp_path / "runs", None, True, True, settings, scorecard="kernelbench")
    assert settings.search.scorecard == "kernelbench"
    config = SuiteConfig.model_validate(ledger.suite()["config"])
    assert config.environment[SCORECARD_ENV] == "kernelbench"  # every job and every resume decides by it


def test_eval_prints_both_scorecards_and_marks_the_one_that_decides():
    result = scored(1.23, "faster", kernelbench(1.31, 1.28, 1.34)).model_copy(
        update={"reference": timing(1.0), "candidate": timing(1 / 1.23), "device": "cuda"})
    with eval_cli.console.capture() as captured:
        eval_cli._print_verdict(result, "scale_relu", "fast.py", 0.02, "kernelbench")
    text = " ".join(captured.get().split())
    assert "speedup 1.23x [1.19-1.27] (95% interval): faster" in text and "(kernelpro: cuda_events)" in text
    assert "KernelBench convention: 1.31x [1.28-1.34] (95% interval): faster" in text
    assert text.count("(decides)") == 1 and text.endswith("no host floor) (decides)")
    with eval_cli.console.capture() as captured:
        eval_cli._print_verdict(result.model_copy(update={"kernelbench": None}), "scale_relu", "fast.py", 0.02)
    text = " ".join(captured.get().split())
    assert "(kernelpro: cuda_events) (decides)" in text and "KernelBench convention: not measured" in text


def test_eval_json_names_the_scorecard_and_its_call(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["eval", str(PROBLEM), str(CANDIDATE), "--device", "cpu", "--no-timing", "--json",
                                 "--scorecard", "kernelbench"])
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.output.strip().splitlines()[-1])
    assert verdict["scorecard"] == "kernelbench" and "kernelbench" in verdict
    assert verdict["improves"] is False  # not timed: no figure in KernelBench's convention, so no improvement
