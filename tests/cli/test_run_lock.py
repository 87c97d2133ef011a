"""One driver per run or suite: a resume while another live process drives it is refused with its holder named;
the lock dies with its holder, however it dies, so a resume after a SIGKILL goes on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelpro.cli import app
from kernelpro.run_lock import RunBusy, RunLock
from kernelpro.runs.files import RunFiles
from kernelpro.suite.report import write_suite_report
from tests.suite.helpers import ledger_with, run_summary

HOLD = ("import sys, time\nfrom kernelpro.run_lock import RunLock\nRunLock.acquire(sys.argv[1], 'it')\n"
        "print('held', flush=True)\ntime.sleep(120)\n")


def hold(directory: Path) -> subprocess.Popen:
    """Another process that drives ``directory`` (holds its lock) until killed."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def killed(holder: subprocess.Popen) -> None:
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)


def test_a_second_driver_is_refused_and_a_killed_ones_lock_is_free_at_once(tmp_path):
    holder = hold(tmp_path)
    try:
        with pytest.raises(RunBusy, match=rf"suite s1 is being run by another process \(pid {holder.pid} on "):
            RunLock.acquire(tmp_path, "suite s1")
    finally:
        killed(holder)
    lock = RunLock.acquire(tmp_path, "suite s1")
    with pytest.raises(RunBusy):  # one process's two drivers are two drivers too
        RunLock.acquire(tmp_path, "suite s1")
    lock.release()
    RunLock.acquire(tmp_path, "suite s1").release()


def test_a_child_of_the_driver_does_not_keep_the_lock(tmp_path):
    lock = RunLock.acquire(tmp_path, "run r")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock.release()
        time.sleep(0.1)
        RunLock.acquire(tmp_path, "run r").release()  # the child inherited no descriptor of it
    finally:
        child.kill()
        child.wait(10)


def test_optimize_resume_of_a_run_another_process_drives_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = RunFiles.create(tmp_path / "runs", "r1", {"problem_path": str(tmp_path / "missing.py"), "device": "cpu",
                                                       "budgets": {"max_iters": 1}})
    holder = hold(files.root)
    try:
        result = CliRunner().invoke(app, ["optimize", "--resume", "r1", "--runs-dir", str(tmp_path / "runs")])
    finally:
        killed(holder)
    assert result.exit_code == 2, result.output
    assert f"run r1 is being run by another process (pid {holder.pid}" in result.output


def test_suite_resume_of_a_suite_another_process_drives_is_refused(tmp_path):
    paths, _ = ledger_with(tmp_path, {"a": {"result": run_summary(True, 2.0)}})
    holder = hold(paths.root)
    try:
        result = CliRunner().invoke(app, ["suite", "run", "--resume", paths.suite_id, "--runs-dir", str(tmp_path)],
                                    env={"COLUMNS": "250"})
    finally:
        killed(holder)
    assert result.exit_code == 2, result.output
    assert f"suite {paths.suite_id} is being run by another process (pid {holder.pid}" in result.output


def test_suite_status_tells_a_running_problem_from_one_whose_driver_was_killed(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"a": {"result": run_summary(True, 2.0)}, "b": {"state": "running"},
                                           "c": {"state": "pending"}})
    status = ["suite", "status", paths.suite_id, "--runs-dir", str(tmp_path)]
    driver = hold(paths.root)
    try:
        live = CliRunner().invoke(app, [*status, "--json"])
        shown = CliRunner().invoke(app, status, env={"COLUMNS": "250"})
    finally:
        killed(driver)  # kill -9: the ledger still says running
    assert json.loads(live.stdout)["states"] == {"a": "done", "b": "running", "c": "pending"}
    assert json.loads(live.stdout)["status"] == "running" and "resume" not in json.loads(live.stdout)
    assert "interrupted" not in shown.output and "Resume with" not in shown.output

    dead = CliRunner().invoke(app, [*status, "--json"])
    data = json.loads(dead.stdout)
    assert data["states"] == {"a": "done", "b": "interrupted", "c": "pending"} and data["status"] == "interrupted"
    assert data["resume"] == f"kernelpro suite run --resume {paths.suite_id} --runs-dir {tmp_path}"
    text = CliRunner().invoke(app, status, env={"COLUMNS": "250"}).output
    assert next(line for line in text.splitlines() if "│ b " in line).split("│")[2].strip() == "interrupted"
    assert f"{paths.suite_id} (time): interrupted;" in text
    assert f"Resume with: kernelpro suite run --resume {paths.suite_id} --runs-dir {tmp_path}" in text
    assert ledger.problem("b").state == "running"  # shown, never written: the resume finds the run it left
    assert not ledger.driven()
    md = write_suite_report(paths, ledger)[1].read_text()
    assert "| Status | interrupted |" in md and "| b | interrupted |" in md
