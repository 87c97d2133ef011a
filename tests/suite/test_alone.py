"""A problem that ran out of GPU memory beside the other problems on its GPU runs again alone there; one that
runs out alone has failed."""

from __future__ import annotations

from kernelpro.config import Settings
from kernelpro.suite import alone
from kernelpro.suite.driver import Driver, Progress
from kernelpro.suite.job import JobOutcome
from kernelpro.suite.lanes import Lane, gpu_lanes, local_lanes
from kernelpro.suite.local import LocalBackend
from kernelpro.suite.report_content import problem_rows
from kernelpro.suite.scores import suite_scores
from tests.suite.helpers import ledger_with, two_problem_cpu_suite

OOM = ("the reference itself fails: the reference's Model.forward failed: CUDA out of memory. Tried to allocate "
       "6.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 5.29 GiB is free.")


def lanes(per_gpu: int, gpus: int = 1) -> list[Lane]:
    settings = Settings()
    settings.suite.lanes_per_gpu = per_gpu
    return gpu_lanes(list(range(gpus)), settings)


def test_a_problem_waits_for_its_gpu_to_be_quiet_and_keeps_it_to_itself():
    gpu0a, gpu0b, gpu1a, gpu1b = lanes(2, gpus=2)
    must = {"big"}.__contains__
    # the others first, so no lane idles while one runs alone; then the big one, on a quiet GPU
    assert alone.pick(["big", "small"], must, [gpu0a, gpu0b], {}, set()) == ("small", gpu0a)
    assert alone.pick(["big"], must, [gpu0a, gpu0b], {}, set()) == ("big", gpu0a)
    # GPU 0 busy: the big one waits
    assert alone.pick(["big"], must, [gpu0b], {gpu0a.name: gpu0a}, set()) is None
    # ... unless another GPU is quiet
    assert alone.pick(["big"], must, [gpu0b, gpu1a], {gpu0a.name: gpu0a}, set()) == ("big", gpu1a)
    # while it runs alone on GPU 1, nothing else starts there; GPU 0 goes on
    busy = {gpu1a.name: gpu1a}
    assert alone.pick(["small"], must, [gpu1b], busy, {gpu1a.name}) is None
    assert alone.pick(["small"], must, [gpu1b, gpu0a], busy, {gpu1a.name}) == ("small", gpu0a)


def test_running_out_of_gpu_memory_beside_others_puts_the_problem_back_and_alone_fails_it(tmp_path):
    paths, ledger = ledger_with(tmp_path, {"level1/31_ELU": {"level": 1, "state": "running"},
                                           "level1/36_RMSNorm": {"level": 1, "state": "running"}})
    shared = Driver(paths, ledger, Settings(), LocalBackend(lanes(2)))
    progress = Progress(total=2)
    ledger.start_attempt("level1/31_ELU", "gpu0.1")
    failed = JobOutcome(key="level1/31_ELU", ok=False, summary={"status": "failed", "stop_reason": OOM,
                                                                "gpu_seconds": 12.0}, wall_s=40.0)
    shared._record(failed, progress)
    row = ledger.problem("level1/31_ELU")
    assert (row.state, row.failure_kind, row.gpu_s) == ("pending", "gpu_memory", 12.0)
    assert "CUDA out of memory" in row.failure and progress.failed == 0 and "alone" in progress.last
    assert alone.waiting(ledger.problems()) == {"level1/31_ELU"}
    rows = ledger.problems()
    status = {r[0]: r[1] for r in problem_rows(rows, suite_scores(rows)[1])}  # what the report and status say
    assert status["level1/31_ELU"] == "pending, alone on its GPU (it ran out of GPU memory beside other problems)"
    ledger.start_attempt("level1/31_ELU", "gpu0.0")  # its second attempt, alone on the GPU
    shared._record(failed, progress)
    row = ledger.problem("level1/31_ELU")
    assert (row.state, row.failure_kind, row.gpu_s) == ("failed", "gpu_memory", 12.0)  # the resumed run's total
    assert row.failure.endswith("(alone on its GPU)") and progress.failed == 1
    # one lane per GPU: nothing else ran there, so running out is the problem's own failure at once
    ledger.start_attempt("level1/36_RMSNorm", "gpu0")
    Driver(paths, ledger, Settings(), LocalBackend(lanes(1)))._record(
        JobOutcome(key="level1/36_RMSNorm", ok=False, failure=f"the run failed: {OOM}"), progress)
    assert (ledger.problem("level1/36_RMSNorm").state, ledger.problem("level1/36_RMSNorm").failure_kind) == (
        "failed", "gpu_memory")
    assert ledger.retry_failed({"gpu_memory"}) == ["level1/31_ELU", "level1/36_RMSNorm"]


def test_a_problem_put_back_for_memory_runs_after_the_others_with_its_lanes_gpu_to_itself(tmp_path, monkeypatch):
    settings, paths, ledger = two_problem_cpu_suite(tmp_path, monkeypatch)
    ledger.update("scale_relu", failure=f"the run failed: {OOM}", failure_kind="gpu_memory")  # put back before
    running: list[dict[str, str]] = []
    Driver(paths, ledger, settings, LocalBackend(local_lanes("cpu", settings)),
           on_progress=lambda progress: running.append(dict(progress.running))).run()
    rows = {row.key: row for row in ledger.problems()}
    assert {row.state for row in rows.values()} == {"done"} and rows["scale_relu"].failure_kind is None
    started = [next(iter(r.values())) for r in running if r]
    assert started[0] == "repeated_relu" and started[-1] == "scale_relu"  # first in the queue, started last
    assert all(len(r) <= 1 for r in running)  # and never beside the other (the CPU lanes are one device)
