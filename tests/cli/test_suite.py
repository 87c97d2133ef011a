"""`kernelpro suite` end to end in real processes: the driver killed with SIGKILL in the middle of a problem,
then resumed; a problem that is not one is recorded failed and the suite goes on; a machine that cannot set a run
up stops the suite; status and report read the ledger while the suite runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from kernelpro.cli.main import app
from kernelpro.exit_codes import SETUP_FAILED
from tests.conftest import DATA
from tests.support.openai_server import openai_server_fixture  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELPRO_")}
    env.update({"KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"), "KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
                "KERNELPRO_HARNESS__REFEREE": "false",
                "KERNELPRO_HARNESS__TIMING_TRIALS": "5", "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5",
                "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "1e9", "KERNELPRO_SEARCH__BATCH_SIZE": "1",
                "KERNELPRO_SEARCH__FINALISTS": "0", "KERNELPRO_SUITE__BASELINES": '["eager"]',
                "KERNELPRO_HARNESS__CORRECTNESS_TRIALS": "2"})
    # this checkout's kernelpro in every process, whatever else the environment has installed
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def cli(args: list[str], env: dict[str, str], cwd: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kernelpro.cli", *args], env=env, cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def alive_with(text: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if text in handle.read().decode(errors="replace"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def wait_for(condition, what: str, proc: subprocess.Popen, timeout_s: float = 240):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        assert proc.poll() is None, f"the suite ended before {what}: {proc.communicate()[1][-3000:]}"
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_suite_killed_mid_problem_resumes_without_losing_or_rejudging_anything(tmp_path, monkeypatch):
    source = tmp_path / "problems"
    source.mkdir()
    shutil.copy(DATA / "problems" / "scale_relu.py", source / "scale_relu.py")
    (source / "a_not_a_problem.py").write_text("x = 1\n")
    env, runs = environment(tmp_path), tmp_path / "suites"
    args = ["--runs-dir", str(runs), "--json"]
    proc = cli(["suite", "run", str(source), "--device", "cpu", "--max-iters", "2", "--no-memory", *args], env,
               tmp_path)
    ledger = wait_for(lambda: next(iter(runs.glob("*/ledger.sqlite")), None), "the ledger", proc)
    suite_id = ledger.parent.name

    def running_run_id():
        with sqlite3.connect(ledger) as conn:
            row = conn.execute("SELECT run_id FROM problems WHERE key = 'scale_relu' AND state = 'running'").fetchone()
        return row[0] if row else None

    run_id = wait_for(running_run_id, "the problem to start", proc)
    status = runner.invoke(app, ["suite", "status", suite_id, *args])  # the ledger read while the suite runs
    assert status.exit_code == 0, status.output
    seen = last_json(status.stdout)
    assert seen["states"] == {"a_not_a_problem": "failed", "scale_relu": "running"} and seen["problems"] == 2
    report = runner.invoke(app, ["suite", "report", suite_id, "--runs-dir", str(runs)])  # also while it runs
    assert report.exit_code == 0, report.output
    md = Path(report.stdout.split()[-1]).read_text()
    assert "### problem (1)" in md and "missing Model" in md and "| scale_relu | running |" in md

    results = runs / suite_id / "runs" / run_id / "results.jsonl"
    wait_for(lambda: results.exists() and results.read_text().count("\n") >= 1, "a judged candidate", proc)
    os.kill(proc.pid, signal.SIGKILL)  # the driver alone: its optimisation child must die with it
    proc.wait(timeout=30)
    before = [json.loads(line)["variant"] for line in results.read_text().splitlines()]
    deadline = time.monotonic() + 30
    while alive_with(run_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive_with(run_id), "the optimisation outlived the suite's driver"
    assert len(before) == 1

    # The resumed driver runs in this process (one interpreter start fewer); its children are real processes.
    # Its shell sets none of the suite's settings but one, otherwise: the suite restores the rest.
    for name in [n for n in os.environ if n.startswith("KERNELPRO_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    monkeypatch.setenv("KERNELPRO_HARNESS__CORRECTNESS_TRIALS", "3")
    monkeypatch.chdir(tmp_path)
    try:
        resumed = runner.invoke(app, ["suite", "run", "--resume", suite_id, *args])
        restored = {n: os.environ.get(n) for n in env if n.startswith("KERNELPRO_")}
    finally:
        for name in [n for n in env if n.startswith("KERNELPRO_") and n != "KERNELPRO_HARNESS__CORRECTNESS_TRIALS"]:
            os.environ.pop(name, None)
    assert resumed.exit_code == 0, resumed.output[-3000:]
    assert restored == {**{n: v for n, v in env.items() if n.startswith("KERNELPRO_")},
                        "KERNELPRO_HARNESS__CORRECTNESS_TRIALS": "3"}
    assert "this shell sets KERNELPRO_HARNESS__CORRECTNESS_TRIALS=3 (the suite started with 2)" in resumed.output
    result = last_json(resumed.stdout)
    assert result["suite_id"] == suite_id and result["status"] == "completed" and result["problems"] == 2
    assert result["failed"] == 1 and result["problems_scored"] == 2 and set(result["fast_p"]) == \
        {"0", "0.5", "0.8", "1.0", "1.2", "1.5", "2.0"}
    assert result["fast_p"]["0"] == 0.5 and result["gpu_seconds"] == 0.0 and result["llm_cost_usd"] == 0.0
    after = [json.loads(line)["variant"] for line in results.read_text().splitlines()]
    assert after[: len(before)] == before and len(after) == len(set(after)) == 2  # nothing lost, none twice
    with sqlite3.connect(ledger) as conn:
        attempts, failure_kind, failure = conn.execute(
            "SELECT (SELECT attempts FROM problems WHERE key = 'scale_relu'), failure_kind, failure FROM problems "
            "WHERE key = 'a_not_a_problem'").fetchone()
    assert attempts == 2 and failure_kind == "problem" and "missing Model" in failure

    md = (runs / suite_id / "suite.md").read_text()  # the driver's, at the end
    assert "### problem (1)" in md and "missing Model" in md and "| scale_relu | " in md and "[report](runs/" in md
    assert "against the fastest torch.compile" not in md  # eager was the only baseline


def test_a_machine_that_cannot_set_a_run_up_stops_the_suite_and_keeps_the_problem_pending(openai_server, tmp_path):
    """A dependency that does not import (here a wrong package of chromadb's name first on the path, as a broken
    install leaves it) would fail every problem alike: the suite stops at the first, says why, keeps that
    problem pending for the resume after the fix, and exits with SETUP_FAILED."""
    shadow = tmp_path / "shadow"
    (shadow / "chromadb").mkdir(parents=True)
    (shadow / "chromadb" / "__init__.py").write_text("")
    source = tmp_path / "problems"
    source.mkdir()
    for name in ("scale_relu.py", "repeated_relu.py"):
        shutil.copy(DATA / "problems" / name, source / name)
    env = environment(tmp_path) | {"KERNELPRO_LLM__MODEL": "openai/test-model",
                                   "KERNELPRO_LLM__API_BASE": openai_server.base_url,
                                   "KERNELPRO_LLM__API_KEY": "sk-loopback", "KERNELPRO_LLM__RETRY_BACKOFF_S": "0.01"}
    env["PYTHONPATH"] = os.pathsep.join([str(shadow), env["PYTHONPATH"]])
    proc = cli(["suite", "run", str(source), "--device", "cpu", "--max-iters", "1", "--runs-dir",
                str(tmp_path / "suites"), "--json"], env, tmp_path)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == SETUP_FAILED, stderr[-3000:]
    result = last_json(stdout)
    assert result["status"] == "stopped" and result["failed"] == 0 and result["finished"] == 0
    assert result["stop_reason"].startswith("a run could not be set up on this machine (ImportError: cannot import")
    assert "chromadb" in result["stop_reason"] and result["stop_reason"].endswith("2 problem(s) not started")
    with sqlite3.connect(result["ledger"]) as conn:
        rows = dict(conn.execute("SELECT key, state || ',' || attempts || ',' || COALESCE(failure_kind, '') "
                                 "FROM problems").fetchall())
    assert sorted(rows.values()) == ["pending,0,", "pending,1,setup"]  # the second never started
    assert "continue with: kernelpro suite run --resume " + result["suite_id"] in stderr


def broken_graph_stack(tmp_path: Path) -> Path:
    """A package the graph library imports, installed without one of its own requirements (langgraph-sdk without
    websockets, as a partial install left it): the graph itself cannot be imported."""
    shadow = tmp_path / "shadow"
    (shadow / "langgraph_sdk").mkdir(parents=True)
    (shadow / "langgraph_sdk" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'websockets'\", name='websockets')\n")
    return shadow


def test_a_python_that_cannot_import_the_graph_starts_no_suite_and_measures_nothing(tmp_path):
    """Found before the suite is made: no baseline is measured for problems that would every one crash alike."""
    env = environment(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(broken_graph_stack(tmp_path)), env["PYTHONPATH"]])
    suites = tmp_path / "suites"
    proc = cli(["suite", "run", str(DATA / "problems" / "scale_relu.py"), "--device", "cpu", "--runs-dir",
                str(suites), "--json"], env, tmp_path)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == SETUP_FAILED, stderr[-3000:]
    said = " ".join(stderr.split())
    assert "the suite does not start: kernelpro.graphs.optimize does not import (it needs 'websockets'" in said
    assert "pip install -e ." in said and not suites.exists() and stdout == ""
    runs = tmp_path / "runs"  # optimize alone says the same, before it makes a run directory
    proc = cli(["optimize", str(DATA / "problems" / "scale_relu.py"), "--device", "cpu", "--runs-dir", str(runs)],
               env, tmp_path)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == SETUP_FAILED and "could not set up the run" in stderr and not runs.exists()


def test_a_problem_fixed_after_it_failed_is_run_again_on_resume_under_new_totals(tmp_path):
    """`--retry KINDS` puts a finished suite's failures of those kinds back in the queue (here a file that was not
    a problem until its user fixed it), and totals given with `--resume` replace the suite's own."""
    source = tmp_path / "problems"
    source.mkdir()
    (source / "scale_relu.py").write_text("def get_inputs():\n    return []\n")  # no Model yet
    env, suites = environment(tmp_path), tmp_path / "suites"
    proc = cli(["suite", "run", str(source), "--device", "cpu", "--max-iters", "1", "--runs-dir", str(suites),
                "--no-memory", "--json"], env, tmp_path)
    stdout, stderr = proc.communicate(timeout=300)
    first = last_json(stdout)
    assert (first["status"], first["failed"]) == ("completed", 1), stderr[-3000:]
    suite_id = first["suite_id"]
    for args, says in ((["--retry", "crash"], "give the suite with --resume ID"),
                       (["--resume", suite_id, "--retry", "crash,typo"], "(not typo)")):
        refused = runner.invoke(app, ["suite", "run", *args, "--runs-dir", str(suites)])
        assert refused.exit_code == 2 and says in " ".join(refused.output.split()), refused.output
    shutil.copy(DATA / "problems" / "scale_relu.py", source / "scale_relu.py")  # the user's fix
    proc = cli(["suite", "run", "--resume", suite_id, "--retry", "problem", "--time-budget", "30m", "--runs-dir",
                str(suites), "--json"], env, tmp_path)
    stdout, stderr = proc.communicate(timeout=300)
    result = last_json(stdout)
    assert "1 failed problem(s) to run again: scale_relu" in stderr
    assert (result["status"], result["failed"], result["finished"]) == ("completed", 0, 1), stderr[-3000:]
    with sqlite3.connect(result["ledger"]) as conn:
        config = json.loads(conn.execute("SELECT config FROM suite").fetchone()[0])
        state, attempts = conn.execute("SELECT state, attempts FROM problems").fetchone()
    assert config["totals"]["time_s"] == 1800.0 and (state, attempts) == ("done", 1)


def test_a_configured_model_whose_client_cannot_import_stops_before_anything_is_made(tmp_path):
    """The model's client (LiteLLM) installed without its own requirement: with a model configured, the suite and
    the run refuse to start; without one they would run the built-in recipes, which need no client."""
    shadow = tmp_path / "shadow"
    (shadow / "litellm").mkdir(parents=True)
    (shadow / "litellm" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'httpx2'\", name='httpx2')\n")
    env = environment(tmp_path) | {"KERNELPRO_LLM__MODEL": "openai/test-model", "KERNELPRO_LLM__API_KEY": "sk-x",
                                   "KERNELPRO_LLM__API_BASE": "http://127.0.0.1:9/v1"}
    env["PYTHONPATH"] = os.pathsep.join([str(shadow), env["PYTHONPATH"]])
    for args in (["suite", "run", str(DATA / "problems" / "scale_relu.py")],
                 ["optimize", str(DATA / "problems" / "scale_relu.py")]):
        proc = cli([*args, "--device", "cpu", "--runs-dir", str(tmp_path / "runs")], env, tmp_path)
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == SETUP_FAILED, stderr[-3000:]
        assert "litellm does not import (it needs 'httpx2'" in " ".join(stderr.split())
        assert not (tmp_path / "runs").exists()
