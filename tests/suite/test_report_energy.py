"""Joules per call and watts in the suite's table (suite.md, suite.html, `suite status`) when its runs measured
energy, none of it when they did not, and the suite's objective in its header."""

from __future__ import annotations

from typer.testing import CliRunner

from kernelpro.cli import app
from kernelpro.cli.suite_options import create_from_options
from kernelpro.suite.report import write_suite_report
from tests.conftest import DATA
from tests.suite.helpers import ledger_with, run_summary

ENERGY = {"objective": "energy", "reference_energy_j": 0.02, "reference_power_w": 520.0,
          "best_energy_j": 0.02 / 1.3, "best_power_w": 410.0, "best_energy_ratio": 1.3,
          "best_energy_ci95": [1.24, 1.37], "best_edp_ratio": 1.17, "best_edp_ci95": [1.11, 1.23]}
# Kept the reference: no best, but the reference's readings from the fastest correct candidate's verdict.
KEPT = {"objective": "energy", "reference_energy_j": 0.021, "reference_power_w": 515.0}


def _energy_suite(tmp_path):
    return ledger_with(tmp_path, {"a": {"result": {**run_summary(True, 0.9), **ENERGY}},
                                  "b": {"result": {**run_summary(False, 0.8), **KEPT}}}, objective="energy")


def test_an_energy_suite_shows_joules_and_watts_of_reference_and_best_with_intervals(tmp_path):
    paths, ledger = _energy_suite(tmp_path)
    html_path, md_path = write_suite_report(paths, ledger)
    md, html = md_path.read_text(), html_path.read_text()
    assert "| Objective | energy |" in md
    assert ("| problem | status | best | 95% interval | vs compile | reference J/call | reference W | best J/call | "
            "best W | energy ratio | EDP ratio | baselines |") in md
    row = next(line for line in md.splitlines() if line.startswith("| a |"))
    assert "| 20 mJ | 520 W | 15.4 mJ | 410 W | 1.30x [1.24-1.37] | 1.17x [1.11-1.23] |" in row
    kept = next(line for line in md.splitlines() if line.startswith("| b |"))
    assert "| 21 mJ | 515 W | - | - | - | - |" in kept
    assert "<th>reference J/call</th>" in html and "<td>15.4 mJ</td>" in html


def test_a_time_suite_without_energy_readings_has_no_energy_columns(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"a": {"result": run_summary(True, 2.0)}}, objective="time")
    _, md_path = write_suite_report(paths, ledger)
    md = md_path.read_text()
    assert "| Objective | time |" in md and "J/call" not in md and " W |" not in md


def test_readings_under_the_time_objective_still_show(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"a": {"result": {**run_summary(True, 2.0), **ENERGY,
                                                             "objective": "time"}}})
    _, md_path = write_suite_report(paths, ledger)
    md = md_path.read_text()
    assert "| Objective | time |" in md and "| 20 mJ | 520 W | 15.4 mJ | 410 W |" in md  # from the runs' summaries


def test_suite_status_prints_the_joules_and_watts(tmp_path):
    paths, _ = _energy_suite(tmp_path)
    result = CliRunner().invoke(app, ["suite", "status", paths.suite_id, "--runs-dir", str(tmp_path)],
                                env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "J/call (reference -> best)" in result.output and "20 mJ -> 15.4 mJ" in result.output
    assert "520 W -> 410 W" in result.output and "suite-test (energy):" in result.output


def test_a_new_suite_records_the_objective_its_runs_get(settings, tmp_path):
    problem = DATA / "problems" / "scale_relu.py"
    _, ledger = create_from_options([problem], [], None, "cpu", None, None, 1, None, None, None, None, tmp_path,
                                    None, True, True, settings)
    assert ledger.suite()["config"]["objective"] == "time"  # the setting's, written down: not None
