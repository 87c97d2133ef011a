"""The driver's decisions that need no child process: a spent budget starts nothing, a file that is not a
problem is refused before any process starts, lanes map to GPUs."""

from __future__ import annotations

from kernelpro.config import Settings
from kernelpro.suite.budget import Limits
from kernelpro.suite.driver import Driver, Progress, best_so_far, summary
from kernelpro.suite.job import JobOutcome
from kernelpro.suite.lanes import gpu_lanes
from kernelpro.suite.layout import SuiteConfig, create_suite
from kernelpro.suite.local import LocalBackend
from kernelpro.suite.sources import resolve_sources
from tests.conftest import DATA
from tests.suite.helpers import ledger_with, run_summary


def test_a_spent_suite_budget_starts_no_problem_and_says_what_was_left(tmp_path):
    refs = resolve_sources([DATA / "problems" / "scale_relu.py", DATA / "problems" / "repeated_relu.py"])
    config = SuiteConfig(sources=["x"], device="cpu", totals=Limits(usd=0.0))
    paths, ledger = create_suite(tmp_path, config, refs)
    status, reason = Driver(paths, ledger, Settings(), LocalBackend([])).run()
    assert status == "stopped" and reason == "suite model budget spent ($0.00 of $0.00); 2 problem(s) not started"
    assert {row.state for row in ledger.problems()} == {"pending"} and not paths.logs.exists()


def test_a_file_that_is_not_a_problem_fails_without_a_process(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def get_inputs():\n    return []\n")
    paths, ledger = create_suite(tmp_path, SuiteConfig(sources=["x"], device="cpu"), resolve_sources([broken]))
    status, reason = Driver(paths, ledger, Settings(), LocalBackend([])).run()
    row = ledger.problem("broken")
    assert (status, row.state, row.failure_kind) == ("completed", "failed", "problem") and "missing Model" in \
        row.failure
    result = summary(paths, ledger, status, reason)
    assert result["failed"] == 1 and result["fast_p"]["0"] == 0.0 and not paths.logs.exists()


def test_each_gpu_lane_sees_its_own_gpu_and_a_share_of_the_cores(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    lanes = gpu_lanes([0, 1], Settings())
    assert [(lane.name, lane.env["CUDA_VISIBLE_DEVICES"]) for lane in lanes] == [("gpu0", "4"), ("gpu1", "5")]
    assert all(lane.env["KERNELPRO_HARNESS__GPU_DEVICES"] == "[0]" and lane.gpus == 1 for lane in lanes)
    assert lanes[0].env["KERNELPRO_COMPILE__WORKERS"] == lanes[0].env["KERNELPRO_COMPILE__INLINE_WORKERS"] == "8"
    settings = Settings()
    settings.compile.workers = 3
    assert "KERNELPRO_COMPILE__WORKERS" not in gpu_lanes([0], settings)[0].env


def test_lanes_per_gpu_share_the_gpu_and_the_cores(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    settings = Settings()
    settings.suite.lanes_per_gpu = 2
    lanes = gpu_lanes([0, 1], settings)
    assert [(lane.name, lane.env["CUDA_VISIBLE_DEVICES"], lane.gpus) for lane in lanes] == [
        ("gpu0.0", "4", 0.5), ("gpu0.1", "4", 0.5), ("gpu1.0", "5", 0.5), ("gpu1.1", "5", 0.5)]
    assert {lane.env["KERNELPRO_COMPILE__WORKERS"] for lane in lanes} == {"4"}


def test_a_retried_problem_keeps_its_baselines_and_counts_their_gpu_time_once(tmp_path):
    """A problem that crashed after its baselines is run again without them being measured again, and its spend is
    its new run's plus the baselines' device time, whichever attempt paid it; a failure of another kind stays."""
    baselines = {"compile_default": {"status": "ok", "speedup": 0.9, "elapsed_s": 30.0}}
    paths, ledger = ledger_with(tmp_path, {
        "level1/1_crashed": {"level": 1, "state": "failed", "baselines": baselines, "failure_kind": "crash",
                             "failure": "the optimisation exited with 1"},
        "level1/2_not_a_problem": {"level": 1, "state": "failed", "failure_kind": "problem", "failure": "no Model"}})
    ledger.update("level1/1_crashed", gpu_s=30.0, attempts=1)
    assert ledger.retry_failed({"crash"}) == ["level1/1_crashed"]
    row = ledger.problem("level1/1_crashed")
    assert (row.state, row.attempts, row.failure, row.baselines, row.gpu_s) == ("pending", 0, None, baselines, 30.0)
    assert ledger.problem("level1/2_not_a_problem").state == "failed"
    driver = Driver(paths, ledger, Settings(), LocalBackend([]))
    assert driver._spec(row, gpu_lanes([0], Settings())[0], 1, ledger.problems()).baselines == []  # not again
    progress = Progress(total=2, gpu_s=30.0)
    driver._record(JobOutcome(key="level1/1_crashed", ok=True, summary=run_summary(True, 1.5, gpu_s=10.0, usd=0.0),
                              wall_s=5.0), progress)
    row = ledger.problem("level1/1_crashed")
    assert (row.state, row.gpu_s, progress.gpu_s) == ("done", 40.0, 40.0)
    assert ledger.retry_failed() == ["level1/2_not_a_problem"]  # all that failed


def test_a_resumed_suite_shows_the_best_of_its_earlier_sessions(tmp_path):
    paths, ledger = ledger_with(tmp_path, {
        "level1/1_slow": {"level": 1, "result": run_summary(False, 0.9)},
        "level1/2_fast": {"level": 1, "result": run_summary(True, 2.5)},
        "level1/3_faster_but_failed": {"level": 1, "state": "failed", "result": run_summary(True, 9.0),
                                       "failure_kind": "crash", "failure": "exited with 1"},
        "level1/4_pending": {"level": 1, "state": "pending"}})  # its file is missing: refused, no process
    assert best_so_far(ledger.problems()) == ("level1/2_fast", 2.5)
    seen: list[tuple[str, float] | None] = []
    Driver(paths, ledger, Settings(), LocalBackend([]), on_progress=lambda p: seen.append(p.best)).run()
    assert seen == [("level1/2_fast", 2.5)]  # the pending problem was refused: the earlier best still shows


def test_a_run_that_died_before_judging_its_baselines_leaves_them_to_the_next_attempt(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"level1/1_hung": {"level": 1, "state": "running"}})
    driver = Driver(paths, ledger, Settings(), LocalBackend([]))
    driver._record(JobOutcome(key="level1/1_hung", ok=False, failure_kind="hang", failure="ran past its limit"),
                   Progress(total=1))
    row = ledger.problem("level1/1_hung")
    assert (row.state, row.baselines) == ("failed", None)
    assert ledger.retry_failed({"hang"}) == ["level1/1_hung"]
    spec = driver._spec(ledger.problem("level1/1_hung"), gpu_lanes([0], Settings())[0], 1, ledger.problems())
    assert spec.baselines == ["compile_default"]  # judged by the next attempt's run
