"""The command line: ``kernelpro eval`` and ``kernelpro doctor`` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from kernelpro.cli import app
from tests.conftest import DATA

runner = CliRunner()
PROBLEM = str(DATA / "problems" / "scale_relu.py")
FAST = {"KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3", "KERNELPRO_HARNESS__TIMING_TRIALS": "10",
        "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5"}

REQUIRED_KEYS = {"status", "reason", "message", "correct", "speedup", "candidate_ms", "reference_ms", "guards"}


def run_eval(*args: str, **env_extra: str) -> subprocess.CompletedProcess:
    """The installed entry point in a real process, as a user would call it."""
    import os

    env = {**os.environ, **FAST, **env_extra}
    return subprocess.run([sys.executable, "-m", "kernelpro.cli", "eval", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_eval_json_prints_exactly_one_object_for_an_honest_candidate():
    """Under the referee, as a user's eval is judged."""
    proc = run_eval(PROBLEM, str(DATA / "candidates" / "honest_scale_relu.py"), "--device", "cpu", "--json",
                    KERNELPRO_HARNESS__REFEREE="true", KERNELPRO_HARNESS__REFEREE_TIMER_FLOOR_MS="1.0")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)  # the whole of stdout is one JSON object
    assert REQUIRED_KEYS <= data.keys()
    assert data["status"] == "ok" and data["correct"] is True
    assert data["candidate_ms"] > 0 and data["reference_ms"] > 0
    # the speedup is taken inside paired rounds (harness.stats), so it need not equal the medians' ratio
    assert data["speedup_ci95"][0] <= data["speedup"] <= data["speedup_ci95"][1]
    assert data["details"]["referee"]["speedup"] == data["speedup"] and data["kernelbench"]["rounds"] >= 3


def test_eval_exits_zero_for_a_rejected_candidate():
    proc = run_eval(PROBLEM, str(DATA / "candidates" / "cheat_input_mutation.py"), "--device", "cpu", "--json")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert (data["status"], data["reason"]) == ("rejected", "input_mutation")
    assert data["guards"][0]["reason"] == "input_mutation"


def test_eval_batch_prints_one_object_with_every_verdict_and_records_them(tmp_path):
    dataset = tmp_path / "judged.jsonl"
    proc = run_eval(PROBLEM, str(DATA / "candidates" / "honest_scale_relu.py"),
                    str(DATA / "candidates" / "cheat_try_except_fallback.py"), "--device", "cpu", "--json",
                    KERNELPRO_FORECAST__DATASET=str(dataset))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["problem"] == "scale_relu"
    assert [(r["status"], r["reason"]) for r in data["results"]] == [("ok", None),
                                                                    ("rejected", "try_except_fallback")]
    assert data["results"][1]["candidate_file"].endswith("cheat_try_except_fallback.py")
    rows = [json.loads(line) for line in dataset.read_text().splitlines()]
    assert [(r["verdict"], r["origin"], r["problem_name"]) for r in rows] == [("ok", "eval", "scale_relu"),
                                                                           ("rejected", "eval", "scale_relu")]
    assert rows[0]["speed_class"] >= 1 and rows[1]["speed_class"] == 0 and rows[0]["speedup_ci95"]


def test_eval_batch_readable_table_tells_same_named_candidates_apart(tmp_path):
    same = []
    for folder, name in (("mine", "fault_syntax.py"), ("theirs", "fault_no_model_new.py")):
        (tmp_path / folder).mkdir()
        same.append(tmp_path / folder / "candidate.py")
        same[-1].write_text((DATA / "candidates" / name).read_text())
    result = runner.invoke(app, ["eval", PROBLEM, *map(str, same), "--device", "cpu"], env=FAST)
    assert result.exit_code == 0
    assert "2 candidates for scale_relu" in result.output and "missing_model_new" in result.output
    lines = result.output.splitlines()
    assert any(line.startswith("mine/candidate.py ") for line in lines)
    assert any(line.startswith("theirs/candidate.py ") and "missing_model_new" in line for line in lines)


def test_eval_readable_verdict():
    result = runner.invoke(app, ["eval", PROBLEM, str(DATA / "candidates" / "fault_segfault.py"),
                                 "--device", "cpu"], env=FAST)
    assert result.exit_code == 0
    assert "runtime_error" in result.output and "SIGSEGV" in result.output


def test_eval_bad_problem_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("x = 1\n")
    result = runner.invoke(app, ["eval", str(bad), str(DATA / "candidates" / "honest_scale_relu.py")])
    assert result.exit_code == 2
    assert "missing Model" in result.output


def test_doctor_reports_each_check_without_secrets(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-doctor-SECRET")
    monkeypatch.setenv("KERNELPRO_LLM__MODEL", "openai/gpt-5")
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    for name in ("GPU", "nvcc", "ptxas", "ncu", "triton", "torch", "llm", "sandbox", "sandbox files",
                 "run libraries"):
        assert name in result.output
    assert "SECRET" not in result.output and "openai/gpt-5" in result.output


def test_doctor_finds_a_run_library_that_does_not_import(tmp_path):
    """A package the graph imports, installed without its own requirement: doctor names both and exits 4."""
    import os

    (tmp_path / "langgraph_sdk").mkdir()
    (tmp_path / "langgraph_sdk" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'websockets'\", name='websockets')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "kernelpro.cli", "doctor", "--json"], env=env, text=True,
                          capture_output=True, timeout=120)
    found = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}["run libraries"]
    assert proc.returncode == 4 and not found["ok"] and found["required"]
    assert "kernelpro.graphs.optimize does not import (it needs 'websockets'" in found["detail"]


def test_eval_says_beside_the_verdict_that_the_problem_is_degenerate():
    constant = str(DATA / "problems" / "constant_gelu.py")
    zeros = str(DATA / "candidates" / "suspect_constant_zeros.py")
    result = runner.invoke(app, ["eval", constant, zeros, "--device", "cpu"], env=FAST)
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("ok") and "[problem: constant_output]" in first
    assert "problem constant_output: the reference returned the same output" in result.output
    assert "output_reused" in result.output
    proc = run_eval(constant, zeros, "--device", "cpu", "--json")
    assert json.loads(proc.stdout)["problem_findings"][0]["reason"] == "constant_output"
