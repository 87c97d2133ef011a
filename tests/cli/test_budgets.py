"""A budget that allows nothing (no candidate, no seconds, no dollars) is bad input wherever it is given: the
options of `optimize`, `suite run` and `chat`, a resumed run's new budget, the settings (environment or
kernelpro.toml), Studio's inputs. It is refused before anything runs, never read as a default or spent at once."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from kernelpro.cli.main import app, run
from kernelpro.exit_codes import BAD_INPUT
from kernelpro.graphs.context import Budgets
from kernelpro.suite.budget import BudgetError, Limits, parse_per_problem
from kernelpro.suite.job import JobSpec, optimize_command
from tests.conftest import DATA

PROBLEM = str(DATA / "problems" / "scale_relu.py")
runner = CliRunner()
REFUSED = [
    (["--max-iters", "-1"], "--max-iters -1: give the number of candidates to judge, at least 1"),
    (["--max-iters", "0"], "--max-iters 0: give the number of candidates to judge, at least 1"),
    (["--usd-budget", "-1"], "--usd-budget -1: give the dollars the models may spend, above 0"),
    (["--usd-budget", "0"], "--usd-budget 0: give the dollars the models may spend, above 0"),
    (["--gpu-budget", "0"], "--gpu-budget '0': give a duration above 0, e.g. 90s, 15m, 2h or 1h30m"),
    (["--time-budget", "0m"], "--time-budget '0m': give a duration above 0, e.g. 90s, 15m, 2h or 1h30m"),
]


@pytest.fixture(autouse=True)
def _own_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no kernelpro.toml but the test's own
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("KERNELPRO_LLM__BUDGET_USD", "KERNELPRO_SUITE__DEFAULT_MAX_ITERS"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(("flags", "said"), REFUSED)
@pytest.mark.parametrize("command", [["optimize", PROBLEM, "--device", "cpu"],
                                     ["suite", "run", PROBLEM, "--device", "cpu"]])
def test_a_budget_that_allows_nothing_is_refused_before_anything_runs(command, flags, said, tmp_path):
    result = runner.invoke(app, [*command, *flags, "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == BAD_INPUT, result.output
    assert said in " ".join(result.output.split())
    assert not (tmp_path / "runs").exists()  # no run, no suite made


def test_a_time_budget_below_zero_is_still_no_duration(tmp_path):
    result = runner.invoke(app, ["optimize", PROBLEM, "--time-budget", "-5m", "--runs-dir", str(tmp_path / "r")])
    assert result.exit_code == BAD_INPUT and "'-5m' is not a duration" in result.output


def test_a_resumed_run_is_refused_a_budget_that_allows_nothing(tmp_path):
    result = runner.invoke(app, ["optimize", "--resume", "r-1", "--max-iters", "0", "--runs-dir", str(tmp_path)])
    assert result.exit_code == BAD_INPUT and "--max-iters 0: give the number of candidates" in result.output


def test_the_chat_is_refused_a_budget_that_allows_nothing(tmp_path):
    result = runner.invoke(app, ["chat", PROBLEM, "--usd-budget", "-1", "--chats-dir", str(tmp_path / "chats")])
    assert result.exit_code == BAD_INPUT and "--usd-budget -1: give the dollars" in result.output
    assert not (tmp_path / "chats").exists()


def test_settings_that_allow_nothing_are_named_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KERNELPRO_LLM__BUDGET_USD", "-1")
    assert run(["optimize", PROBLEM, "--device", "cpu", "--runs-dir", str(tmp_path / "runs")]) == BAD_INPUT
    err = capsys.readouterr().err
    assert "error: the setting llm.budget_usd = '-1' (KERNELPRO_LLM__BUDGET_USD or llm.budget_usd in " \
           "kernelpro.toml): input should be greater than 0" in err
    assert "Traceback" not in err
    monkeypatch.delenv("KERNELPRO_LLM__BUDGET_USD")
    (tmp_path / "kernelpro.toml").write_text("[suite]\ndefault_max_iters = 0\n")
    assert run(["suite", "run", PROBLEM, "--device", "cpu", "--runs-dir", str(tmp_path / "runs")]) == BAD_INPUT
    assert "the setting suite.default_max_iters = 0" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_every_other_path_refuses_them_too():
    for bad in ({"max_iters": 0}, {"max_iters": -1}, {"usd": 0.0}, {"gpu_s": -5.0}, {"time_s": 0.0}):
        with pytest.raises(ValidationError):
            Budgets(**bad)  # Studio's inputs and a resumed run's kept budgets are read through it
    for bad in ("usd=0", "gpu=0s", "0", "time=10m,usd=-1"):
        with pytest.raises(BudgetError, match="must be above 0"):
            parse_per_problem(bad)


def test_a_suite_share_left_near_zero_is_passed_on_as_above_zero(tmp_path):
    spec = JobSpec(key="p", path=PROBLEM, run_id="r-1", runs_dir=str(tmp_path), log_dir=str(tmp_path),
                   device="cpu", max_iters=1, budgets=Limits(usd=1e-9))
    command = optimize_command(spec)
    assert command[command.index("--usd-budget") + 1] == "0.000001"
