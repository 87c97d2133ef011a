"""One problem's job: its commands, its limit (a hung problem is killed with its processes and recorded), the
children dying with the process that started them, and the compile baselines as candidates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kernelpro.forecast.dataset import read_rows
from kernelpro.harness.judge import precheck
from kernelpro.harness.result import EvalResult
from kernelpro.suite.baselines import baseline_source, fastest_compile, record_baselines, summarise
from kernelpro.suite.budget import Limits
from kernelpro.suite.job import JobSpec, _parse, _run, optimize_command, run_job
from tests.conftest import DATA, problem


def spec(tmp_path, **fields) -> JobSpec:
    return JobSpec(**{"key": "level1/19_ReLU", "path": str(DATA / "problems" / "scale_relu.py"), "run_id": "r-1",
                      "runs_dir": str(tmp_path / "runs"), "log_dir": str(tmp_path / "logs"), "device": "cpu",
                      "max_iters": 2, **fields})


def test_a_new_run_gets_the_ledgers_run_id_and_a_started_one_is_resumed(tmp_path):
    job = spec(tmp_path, budgets=Limits(time_s=120, usd=0.25), policy="greedy", no_profile=True,
               baselines=["compile_default", "compile_max_autotune_no_cudagraphs"])
    command = optimize_command(job)
    assert command[command.index("--run-id") + 1] == "r-1" and "--resume" not in command
    # the run judges the baselines the ledger lacks itself, before its search
    assert command[command.index("--baselines") + 1] == "compile_default,compile_max_autotune_no_cudagraphs"
    assert "--baselines" not in optimize_command(spec(tmp_path))  # none lacking
    assert command[command.index("--time-budget") + 1] == "120s" and "--gpu-budget" not in command
    assert command[command.index("--policy") + 1] == "greedy" and "--no-profile" in command
    assert command[2] == "kernelpro.suite.orphan_guard" and command[3] == str(os.getpid())
    (tmp_path / "runs" / "r-1").mkdir(parents=True)
    (tmp_path / "runs" / "r-1" / "run.json").write_text("{}")
    resumed = optimize_command(job)
    assert resumed[resumed.index("--resume") + 1] == "r-1" and "--max-iters" not in resumed
    assert "--baselines" in resumed  # a run started before they were asked for judges them too


def test_the_runs_a_suite_starts_keep_its_directory_out_of_their_candidates_reach(tmp_path):
    """Its ledger holds every problem's best verdict: the children's workers get the suite's directory read-only."""
    probe = [sys.executable, "-c", "import os; print(os.environ['KERNELPRO_HARNESS__PROTECTED_DIRS'])", "", ""]
    code, last, _, stopped = _run(probe, spec(tmp_path), "probe", 60)
    assert code == 0 and json.loads(last) == [str(tmp_path.resolve())] and not stopped


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def test_a_problem_that_overruns_its_limit_is_killed_and_recorded_as_hung(tmp_path):
    start = time.monotonic()
    outcome = run_job(spec(tmp_path, timeout_s=1.0, baselines=["compile_default"]))
    assert not outcome.ok and outcome.failure_kind == "hang" and "ran past the limit of 1 s" in outcome.failure
    assert outcome.baselines is None  # none judged: the next attempt judges them
    assert time.monotonic() - start < 30
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and str(tmp_path) in _cmdline(pid)]
    assert (tmp_path / "logs" / "level1_19_ReLU.optimize.log").read_text().startswith("--- ")


def test_a_run_killed_from_outside_comes_back_lost_so_the_driver_starts_it_again(tmp_path):
    import threading

    outcomes = []
    worker = threading.Thread(target=lambda: outcomes.append(run_job(spec(tmp_path, timeout_s=120.0))))
    worker.start()
    deadline = time.monotonic() + 60
    while not (runs := [pid for pid in os.listdir("/proc") if pid.isdigit() and "kernelpro.cli" in _cmdline(pid)
                        and str(tmp_path) in _cmdline(pid)]):
        assert worker.is_alive() and time.monotonic() < deadline, outcomes
        time.sleep(0.05)
    os.kill(int(runs[0]), signal.SIGKILL)  # as the out-of-memory killer, or Ray taking its actor's children, would
    worker.join(timeout=60)
    assert outcomes and outcomes[0].failure_kind == "lost" and not outcomes[0].ok
    assert "killed from outside" in outcomes[0].failure


def test_a_resumed_problem_waits_for_its_lost_attempt_to_let_its_run_go(tmp_path):
    import threading

    from kernelpro.run_lock import RunLock

    job = spec(tmp_path, max_iters=1, no_memory=True, no_profile=True)  # one recipe judged, then it completes
    first = run_job(job)
    assert first.ok and first.summary["status"] == "completed", first.failure
    held = RunLock.acquire(tmp_path / "runs" / "r-1", "the run")  # as a lost attempt's dying process would
    threading.Timer(1.5, held.release).start()
    again = run_job(job)  # refused as busy, had it not waited
    assert again.ok and again.summary["run_id"] == "r-1", again.failure
    assert again.wall_s >= 1.0


def test_what_a_child_leaves_says_how_it_ended():
    summary = {"run_id": "r-1", "status": "completed"}
    assert _parse(0, json.dumps(summary), "", 60, "the optimisation") == (summary, None, "")
    tail = "--- 2026-12-01T00:00:00Z optimize p.py\nTraceback (most recent call last):\n  ...\nMemoryError: boom\n"
    assert _parse(1, "", tail, 60, "the optimisation") == \
        (None, "crash", "the optimisation exited with 1: Traceback (most recent call last): | ... | MemoryError: boom")
    assert _parse(-11, "", tail, 60, "the optimisation")[1] == "crash"  # a segfault is the run's own
    killed = _parse(-9, "", tail, 60, "the optimisation")  # SIGKILL, not by the job: started again
    assert killed[1] == "lost" and killed[2].startswith("the optimisation was killed from outside (SIGKILL")
    assert _parse(0, "not json", "", 60, "the optimisation")[1] == "crash"
    refused = _parse(2, "", "No language model...\nerror: p.py: no such file\n", 60, "the optimisation")
    assert refused == (None, "problem", "error: p.py: no such file")
    broken = _parse(5, "", "error: could not set up the run (ModuleNotFoundError: No module named 'chromadb'); fix "
                    "it and continue with: kernelpro optimize --resume r-1\n", 60, "the optimisation")
    assert broken[1] == "setup" and "No module named 'chromadb'" in broken[2]
    assert _parse(None, "", "", 90.4, "the baselines") == \
        (None, "hang", "the baselines ran past the limit of 90 s and was killed")


def test_a_child_dies_with_the_process_that_started_it(tmp_path):
    pid_file = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", (
        "import os, subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-m', 'kernelpro.suite.orphan_guard', str(os.getpid()), "
        f"sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n")])
    deadline = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    time.sleep(0.5)  # the guard has exec'd into the sleeper
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        if open(f"/proc/{child}/stat").read().split()[2] == "Z":
            break  # dead, waiting for init to reap it
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        raise AssertionError("the child outlived its parent")


def test_compile_baselines_are_candidates_the_guards_accept():
    for name, mode in (("compile_default", "default"),
                       ("compile_max_autotune_no_cudagraphs", "max-autotune-no-cudagraphs")):
        source = baseline_source(problem("scale_relu"), name)
        assert f'torch.compile(self.inner, mode="{mode}")' in source and "class ModelNew" in source
        found = precheck(source)
        assert not isinstance(found, EvalResult) and not [f for f in found if f.severity == "reject"]
    assert fastest_compile({"compile_default": {"correct": True, "speedup": 1.3},
                            "compile_max_autotune_no_cudagraphs": {"correct": False, "speedup": None}}) == \
        ("compile_default", 1.3)
    assert fastest_compile({}) is None


def test_judged_baselines_are_rows_of_the_judged_candidate_dataset(tmp_path):
    scale_relu = problem("scale_relu")
    results = {"compile_default": EvalResult(status="ok", correct=True, speedup=1.4, speedup_ci95=[1.3, 1.5],
                                             speed_verdict="faster"),
               "compile_max_autotune_no_cudagraphs": EvalResult(status="runtime_error", reason="compile_failed",
                                                                message="inductor failed\nmore")}
    dataset = tmp_path / "judged.jsonl"
    assert record_baselines(dataset, scale_relu, results, "cpu", "r-1") == 2
    rows = read_rows(dataset)
    assert [(r.origin, r.tags, r.run_id, r.verdict) for r in rows] == [
        ("suite-baseline", {"baseline": "compile_default"}, "r-1", "ok"),
        ("suite-baseline", {"baseline": "compile_max_autotune_no_cudagraphs"}, "r-1", "runtime_error")]
    assert rows[0].candidate_source == baseline_source(scale_relu, "compile_default") and rows[0].speed_class > 0
    assert rows[1].speed_class == 0 and rows[0].problem_source == scale_relu.source
    assert summarise(results)["compile_max_autotune_no_cudagraphs"]["message"] == "inductor failed"


def test_a_run_judges_its_baselines_first_once_and_their_verdicts_answer_the_recipes_that_are_their_code(
        tmp_path, monkeypatch):
    """``optimize --baselines`` judges them with the run's own worker before its search; the recipe policy's
    torch.compile recipes are the baselines' very code, so a suite judges each once, and a resumed run never
    judges them again."""
    from kernelpro.recipes.catalogue import recipes_for
    from kernelpro.runs.judged_before import JudgedBefore, write_verdicts

    scale_relu = problem("scale_relu")
    recipes = {device: {r.name: r.source for r in recipes_for(scale_relu, device)} for device in ("cpu", "cuda")}
    any_verdict = EvalResult(status="ok", correct=True, speedup=1.0)
    for device, name in (("cuda", "compile_default"), ("cuda", "compile_max_autotune_no_cudagraphs"),
                         ("cpu", "compile_default")):
        write_verdicts(tmp_path / "one.jsonl", [("baseline", baseline_source(scale_relu, name), any_verdict)])
        assert JudgedBefore.read(tmp_path / "one.jsonl").find(recipes[device][name]) is not None, (device, name)

    for name, value in (("HARNESS__TIMING_BUDGET_S", "0.3"), ("HARNESS__CORRECTNESS_TRIALS", "2"),
                        ("FORECAST__RECORD", "false"), ("SEARCH__FINALISTS", "0")):
        monkeypatch.setenv(f"KERNELPRO_{name}", value)
    job = spec(tmp_path, max_iters=1, policy="recipes", no_memory=True, baselines=["compile_default"])
    outcome = run_job(job)  # the suite's child: kernelpro optimize --baselines compile_default
    assert outcome.ok, outcome.failure
    log = (tmp_path / "logs" / "level1_19_ReLU.optimize.log").read_text()
    assert "judging the compile baselines first: compile_default" in log
    baseline = outcome.baselines["compile_default"]
    assert baseline["status"] == "ok" and baseline["speedup_ci95"] and outcome.summary["baselines"] == outcome.baselines
    verdicts = [json.loads(p.read_text()) for p in (tmp_path / "runs" / "r-1" / "candidates").glob("*.json")]
    answered = [v for v in verdicts if (v.get("details") or {}).get("answered_by")]
    assert [v["details"]["answered_by"] for v in answered] == ["the compile_default baseline"]
    assert answered[0]["speedup"] == baseline["speedup"]
    assert len(verdicts) - len(answered) == 1  # the budget went to the next recipe
    [row] = [line for line in Path(outcome.summary["report_md"]).read_text().splitlines()
             if "torch.compile baselines" in line]
    assert "compile_default " in row  # the run's own report shows them

    again = run_job(job)  # started again (after a kill, say): the run resumes and does not judge them again
    assert again.ok and again.baselines == outcome.baselines, again.failure
    log = (tmp_path / "logs" / "level1_19_ReLU.optimize.log").read_text()
    assert log.count("judging the compile baselines first") == 1
