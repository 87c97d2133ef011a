"""`--objective` on `optimize` and `suite run`: refused up front where energy cannot be measured, passed on to a
suite's runs, and the `--json` summary's energy fields (in process)."""

from __future__ import annotations

import json

import pytest
import torch
import typer
from typer.testing import CliRunner

from kernelpro.cli import app
from kernelpro.cli.inputs import objective_or_fail
from kernelpro.exit_codes import BAD_INPUT
from kernelpro.forecast.gate import ForecastGate
from kernelpro.graphs.run_outputs import write_outputs
from kernelpro.harness.timing.energy import unavailable
from kernelpro.runs.files import RunFiles
from kernelpro.suite.job import JobSpec, optimize_command
from tests.conftest import DATA
from tests.forecast.test_gate import Fixed
from tests.graphs.helpers import make_context
from tests.search.test_objective import FASTER_HUNGRIER, SLOWER_LEANER, trade_off, tree_of, verdict

runner = CliRunner()
PROBLEM = DATA / "problems" / "scale_relu.py"


@pytest.mark.parametrize("objective", ["energy", "edp"])
def test_optimize_refuses_an_energy_objective_on_a_cpu(objective, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["optimize", str(PROBLEM), "--device", "cpu", "--objective", objective,
                                 "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == BAD_INPUT
    assert f"--objective {objective} needs NVML's energy readings on an NVIDIA GPU" in " ".join(result.output.split())
    assert not (tmp_path / "runs").exists()  # nothing was started


def test_optimize_and_suite_refuse_an_unknown_objective_and_the_suite_an_energy_one_on_a_cpu(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = runner.invoke(app, ["optimize", str(PROBLEM), "--device", "cpu", "--objective", "watts"])
    assert bad.exit_code == BAD_INPUT and "use one of time, energy, edp" in bad.output
    suite = runner.invoke(app, ["suite", "run", str(PROBLEM), "--device", "cpu", "--objective", "energy",
                                "--runs-dir", str(tmp_path / "runs")])
    assert suite.exit_code == BAD_INPUT and "needs NVML's energy readings" in " ".join(suite.output.split())
    assert not (tmp_path / "runs").exists()


def test_the_setting_is_refused_like_the_flag(settings):
    settings.search.objective = "energy"
    with pytest.raises(typer.Exit) as refused:
        objective_or_fail(None, settings, "cpu")
    assert refused.value.exit_code == BAD_INPUT
    settings.search.objective = "time"
    objective_or_fail(None, settings, "cpu")  # time needs nothing


@pytest.mark.skipif(torch.cuda.is_available() and unavailable(0) is None, reason="NVML gives energy here")
def test_cuda_without_an_energy_counter_is_refused(settings):
    with pytest.raises(typer.Exit) as refused:
        objective_or_fail("energy", settings, "cuda")
    assert refused.value.exit_code == BAD_INPUT


def test_choosing_energy_turns_the_judges_readings_on(settings):
    settings.search.objective = "edp"
    assert not settings.harness.energy
    settings.apply_objective()  # what objective_or_fail does once the device can measure energy
    assert settings.harness.energy


def test_a_suite_passes_its_objective_to_every_run(tmp_path):
    fields = {"key": "p", "path": str(PROBLEM), "run_id": "r-1", "runs_dir": str(tmp_path / "runs"),
              "log_dir": str(tmp_path / "logs"), "device": "cuda", "max_iters": 2}
    command = optimize_command(JobSpec(**fields, objective="energy"))
    assert command[command.index("--objective") + 1] == "energy"
    assert "--objective" not in optimize_command(JobSpec(**fields))


def _summary(settings, tmp_path, objective: str, tree=None, gate=None) -> dict:
    context = make_context(settings, tmp_path / objective, None, problem_name="scale_relu")
    context.gate = gate or context.gate
    try:
        files = RunFiles.create(tmp_path / objective / "out", "run-x", {"problem_path": str(PROBLEM)})
        tree = tree if tree is not None else trade_off(objective)
        state = {"variants": tree.to_state(), "objective": objective, "iteration": 2}
        return json.loads(json.dumps(write_outputs(files, state, "completed", context, None)))
    finally:
        context.evaluate.close()


def test_the_json_summary_names_the_objective_and_the_bests_energy(settings, tmp_path):
    energy = _summary(settings, tmp_path, "energy")
    lean = verdict(0.9, "slower", 1.3, "less", 1.17, "less")
    assert energy["objective"] == "energy" and energy["improved"]
    assert energy["best_speedup"] == pytest.approx(0.9)  # the energy best is slower, and says so
    assert energy["best_energy_ratio"] == pytest.approx(1.3)
    assert energy["best_energy_ci95"] == pytest.approx(lean.energy_ci95)
    assert energy["best_edp_ratio"] == pytest.approx(1.17) and energy["best_edp_ci95"] == pytest.approx(lean.edp_ci95)
    assert energy["best_energy_j"] == pytest.approx(0.02 / 1.3) and energy["reference_energy_j"] == 0.02
    assert (energy["best_power_w"], energy["reference_power_w"]) == (410.0, 520.0)
    report = (tmp_path / "energy" / "out" / "run-x" / "report.md").read_text()
    assert "| Objective | energy |" in report and "## Time and energy" in report
    assert SLOWER_LEANER in report
    assert "15.4 mJ/call at 410 W vs reference 20 mJ/call at 520 W" in report  # each step's outcome
    timed = _summary(settings, tmp_path, "time")
    assert timed["objective"] == "time" and timed["best_speedup"] == pytest.approx(1.6)
    assert timed["best_energy_ratio"] == pytest.approx(0.8)  # measured, so shown, though time chose it
    assert FASTER_HUNGRIER in (tmp_path / "time" / "out" / "run-x" / "report.md").read_text()


def test_a_run_that_keeps_the_reference_still_reports_the_references_joules_and_writes_its_summary(settings,
                                                                                                     tmp_path):
    noisy = tree_of("energy", ("within the noise", verdict(1.2, "faster", 1.01, "same", 1.2, "less")),
                    ("faster still", verdict(1.5, "faster", 1.02, "same", 1.5, "less")))
    kept = _summary(settings, tmp_path, "energy", noisy)
    assert not kept["improved"] and kept["best_energy_j"] is None and kept["best_energy_ratio"] is None
    assert (kept["reference_energy_j"], kept["reference_power_w"]) == (0.02, 520.0)  # the fastest's verdict
    written = tmp_path / "energy" / "out" / "run-x" / "summary.json"
    assert kept["summary"] == str(written) and json.loads(written.read_text()) == kept


def test_the_summary_and_report_say_a_speed_forecast_gate_assumes_equal_power_under_energy(settings, tmp_path):
    gated = _summary(settings, tmp_path, "energy", gate=ForecastGate(Fixed(), "select", objective="energy"))
    said = "ranked by predicted speed; under energy this assumes equal power (energy ratio = time ratio)"
    assert gated["gate"] == "forecast-select (fixed)" and gated["gate_ranking"] == said
    report = (tmp_path / "energy" / "out" / "run-x" / "report.md").read_text()
    assert f"judging saved ({said}) |" in report
