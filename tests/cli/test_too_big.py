"""A problem too big for this machine's memory ends `optimize` as unusable here (exit 2) with "too big for this
machine", the inputs' footprint and the limit; a suite counts it failed with that reason, not as "no correct"."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernelpro.cli.main import app
from kernelpro.exit_codes import BAD_INPUT
from tests.conftest import DATA

PROBLEM = str(DATA / "problems" / "too_big_inputs.py")
runner = CliRunner()


@pytest.fixture(autouse=True)
def _small_machine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, value in {"HOME": str(tmp_path / "home"), "KERNELPRO_HARNESS__MEMORY_LIMIT_MB": "1024",
                        "KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"),
                        "KERNELPRO_FORECAST__DATASET": str(tmp_path / "judged.jsonl"),
                        "KERNELPRO_SUITE__BASELINES": '["eager"]'}.items():
        monkeypatch.setenv(name, value)


def test_a_run_on_a_problem_too_big_for_the_machine_says_so_and_is_unusable_here(tmp_path):
    result = runner.invoke(app, ["optimize", PROBLEM, "--device", "cpu", "--max-iters", "1", "--no-memory",
                                 "--runs-dir", str(tmp_path / "runs")])
    said = " ".join(result.output.split())
    assert result.exit_code == BAD_INPUT, said[-3000:]
    assert "error: too big for this machine: get_inputs() makes 0.50 GiB of inputs" in said
    assert "raise harness.memory_limit_mb (now 1024" in said
    assert "no candidate was correct" not in said
    [run_dir] = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["no_improvement_reason"].startswith("too big for this machine")


def test_a_suite_counts_a_problem_too_big_as_failed_with_why(tmp_path):
    result = runner.invoke(app, ["suite", "run", PROBLEM, "--device", "cpu", "--max-iters", "1", "--no-memory",
                                 "--runs-dir", str(tmp_path / "suites"), "--json"])
    assert result.exit_code == 0, result.output[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert (summary["failed"], summary["correct"]) == (1, 0)
    from kernelpro.suite.layout import open_suite

    _, ledger = open_suite(tmp_path / "suites", summary["suite_id"])
    [row] = ledger.problems()
    assert (row.state, row.failure_kind) == ("failed", "problem")
    assert "too big for this machine: get_inputs() makes 0.50 GiB of inputs" in row.failure
