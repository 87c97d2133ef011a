"""The device lock: one judgment at a time on a device across processes, keyed by the physical device, dropped
when its holder dies; a pipeline waits for it and starts its worker outside it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kernelpro.config import HarnessSettings
from kernelpro.harness.device_lock import device_key, device_lock, shared_until_exclusive
from kernelpro.harness.jobs import make_job
from kernelpro.harness.pipeline import Pipeline
from tests.conftest import candidate, problem

HOLD = """
import sys, time
from pathlib import Path
from kernelpro.config import HarnessSettings
from kernelpro.harness.device_lock import device_lock
harness = HarnessSettings(device_lock="on", device_lock_dir=Path(sys.argv[1]))
print("asking", flush=True)
with device_lock(sys.argv[2], harness, shared=sys.argv[4] == "shared"):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
"""


def hold(lock_dir, device: str, seconds: float, shared: bool = False, wait: bool = True) -> subprocess.Popen:
    """Another process holding ``device``'s lock (``shared`` or not) for ``seconds``; returns once it holds it,
    or, with ``wait`` False, once it has asked for it."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock_dir), device, str(seconds),
                             "shared" if shared else "exclusive"],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "asking"
    if wait:
        assert proc.stdout.readline().strip() == "held"
    return proc


def kill(*procs: subprocess.Popen) -> None:
    for proc in procs:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_a_device_is_named_by_the_gpu_the_driver_sees(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,GPU-8f2e/x")
    assert (device_key("cuda"), device_key("cuda:0"), device_key("cuda:1")) == ("gpu-3", "gpu-3", "gpu-GPU-8f2e_x")
    assert device_key("cpu") == "cpu"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert device_key("cuda:2") == "gpu-2"


def test_a_second_process_waits_and_a_killed_holder_frees_the_device_at_once(tmp_path):
    harness = HarnessSettings(device_lock="on", device_lock_dir=tmp_path)
    holder = hold(tmp_path, "cuda:0", 1.5)
    with device_lock("cuda:0", harness) as waited:
        assert waited > 0.5  # it held the lock until it ended
    holder.wait(timeout=30)
    killed = hold(tmp_path, "cuda:0", 600)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait(timeout=30)
    start = time.monotonic()
    with device_lock("cuda:0", harness), device_lock("cuda:1", harness) as other:
        assert other < 1.0  # another GPU's lock is its own
    assert time.monotonic() - start < 5


def test_a_pipeline_judges_only_once_the_device_is_free_and_auto_leaves_the_cpu_unlocked(settings, tmp_path):
    settings.harness.device_lock, settings.harness.device_lock_dir = "on", tmp_path / "locks"
    items = [(problem("scale_relu"), candidate("honest_scale_relu"))]
    with Pipeline("cpu", settings) as pipeline:
        pipeline.judge(items)  # the worker is up; the next judgment's wait is the other process's hold alone
        holder = hold(settings.harness.device_lock_dir, "cpu", 3.0)
        [result] = pipeline.judge(items)
        holder.wait(timeout=30)
        assert result.status == "ok" and pipeline.stats.device_lock_wait_s > 1.5
        settings.harness.device_lock = "auto"  # GPUs only
        holder = hold(settings.harness.device_lock_dir, "cpu", 30)
        try:
            before = pipeline.stats.device_lock_wait_s
            [result] = pipeline.judge(items)
            assert result.status == "ok" and pipeline.stats.device_lock_wait_s == before
        finally:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait(timeout=30)


def test_a_lock_that_cannot_be_opened_is_warned_about_and_the_judgment_goes_on(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    harness = HarnessSettings(device_lock="on", device_lock_dir=blocker / "locks")
    with pytest.warns(RuntimeWarning, match="cannot open the device lock"), device_lock("cpu", harness) as waited:
        assert waited == 0.0


def test_shared_holders_overlap_each_other_never_a_measurement_and_a_waiting_measurement_goes_first(tmp_path):
    harness = HarnessSettings(device_lock="on", device_lock_dir=tmp_path)
    sharing = hold(tmp_path, "cuda:0", 2.0, shared=True)
    try:
        with device_lock("cuda:0", harness, shared=True) as waited:
            assert waited < 1.0  # two shared holders at once
        with device_lock("cuda:0", harness) as waited:
            assert waited > 0.5  # a measurement waits for the shared hold to end
        sharing.wait(timeout=30)
        measuring = hold(tmp_path, "cuda:0", 2.0)
        with device_lock("cuda:0", harness, shared=True) as waited:
            assert waited > 0.5  # and a shared holder for the measurement
        measuring.wait(timeout=30)
        # A measurement waiting behind a shared hold holds the turnstile: a shared holder asking after it waits too.
        # (held long enough to outlast the measurement's own start-up, a second or more on a busy machine)
        sharing = hold(tmp_path, "cuda:0", 4.0, shared=True)
        measuring = hold(tmp_path, "cuda:0", 2.0, wait=False)
        time.sleep(1.0)  # it is waiting now
        start = time.monotonic()
        with device_lock("cuda:0", harness, shared=True):
            # the measurement had its turn first (were this shared holder let in ahead of it, it would still be waiting)
            assert measuring.wait(timeout=20) == 0
        assert time.monotonic() - start > 2.5
    finally:
        for proc in (sharing, measuring):
            if proc.poll() is None:
                kill(proc)


UPGRADE = """
import sys, time
from pathlib import Path
from kernelpro.config import HarnessSettings
from kernelpro.harness.device_lock import shared_until_exclusive
harness = HarnessSettings(device_lock="on", device_lock_dir=Path(sys.argv[1]))
with shared_until_exclusive("cuda:0", harness) as turn:
    print("shared", flush=True)
    time.sleep(float(sys.argv[2]))
    turn.take_exclusive()
    print("alone", time.monotonic(), flush=True)
    time.sleep(float(sys.argv[3]))
    print("done", time.monotonic(), flush=True)
"""


def upgrading(lock_dir, shared_s: float, alone_s: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", UPGRADE, str(lock_dir), str(shared_s), str(alone_s)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "shared"
    return proc


def test_jobs_that_share_the_device_until_timing_overlap_their_shared_parts_and_take_turns_alone(tmp_path):
    harness = HarnessSettings(device_lock="on", device_lock_dir=tmp_path)
    first, second = upgrading(tmp_path, 1.0, 1.5), upgrading(tmp_path, 1.0, 1.5)  # both shared at once
    try:
        spans = []
        for proc in (first, second):  # both ask to be alone while the other holds it shared: no deadlock
            alone, done = (float(proc.stdout.readline().split()[1]) for _ in range(2))
            assert proc.wait(timeout=30) == 0
            spans.append((alone, done))
        (a0, a1), (b0, b1) = sorted(spans)
        assert a1 <= b0  # never alone together
    finally:
        kill_alive(first, second)
    holder = hold(tmp_path, "cuda:0", 2.0)  # a measurement
    with shared_until_exclusive("cuda:0", harness) as turn:
        assert turn.waited_s > 1.0  # shared work waits for a measurement
        holder.wait(timeout=30)
        sharing = hold(tmp_path, "cuda:0", 1.5, shared=True)  # another lane's shared part
        assert turn.take_exclusive() > 0.8 and turn.exclusive
        sharing.wait(timeout=30)
        start = time.monotonic()
        waiting = hold(tmp_path, "cuda:0", 0.1, shared=True, wait=False)
        time.sleep(1.0)
        assert waiting.poll() is None  # no shared part while this one is alone
    waiting.wait(timeout=30)
    assert time.monotonic() - start < 10


def test_a_benchmark_holds_the_device_alone_between_shared_holds_and_timing_after_it_waits_on_no_waiter(tmp_path):
    harness = HarnessSettings(device_lock="on", device_lock_dir=tmp_path)
    procs: list[subprocess.Popen] = []
    try:
        with shared_until_exclusive("cuda:0", harness) as turn:
            procs.append(hold(tmp_path, "cuda:0", 1.5, shared=True))  # another lane's checks
            assert turn.take_alone_to_benchmark() > 0.8 and turn.benchmarking  # they end first
            procs.append(hold(tmp_path, "cuda:0", 0.1, shared=True, wait=False))
            time.sleep(1.0)
            assert procs[-1].poll() is None  # no shared work beside a benchmark
            turn.take_shared()
            assert procs[-1].wait(timeout=30) == 0 and not turn.benchmarking
            procs.append(hold(tmp_path, "cuda:0", 0.1, shared=True))  # shared again: others overlap it
            turn.let_go()
            assert turn.take_alone_to_benchmark() < 1.0 and turn.take_shared() < 1.0  # from let go, and back
            assert turn.take_alone_to_benchmark() < 1.0
            turn.let_go()  # a benchmark inside a compile ends with the device let go
            assert turn.released and turn.take_alone_to_benchmark() < 1.0
            procs.append(hold(tmp_path, "cuda:0", 0.1, wait=False))  # a measurement waits, holding the turnstile
            time.sleep(0.5)
            start = time.monotonic()
            assert turn.take_exclusive() == 0.0 and turn.exclusive  # alone already: it does not queue behind it
            assert time.monotonic() - start < 0.5 and procs[-1].poll() is None
            assert turn.take_alone_to_benchmark() == 0.0 and turn.exclusive  # timing: stays alone
        assert procs[-1].wait(timeout=30) == 0  # its turn once the job is done
        assert turn.benchmarks == 4 and turn.spans["benchmarking"] > 1.0 and turn.spans["waited_benchmark"] > 0.8
        assert turn.waited_s >= turn.spans["waited_benchmark"]
    finally:
        kill_alive(*procs)


def kill_alive(*procs: subprocess.Popen) -> None:
    kill(*(proc for proc in procs if proc.poll() is None))


def test_sharing_until_timing_a_failing_candidate_never_waits_and_timing_waits_for_the_shared_part(settings,
                                                                                                 tmp_path):
    settings.harness.device_lock, settings.harness.device_lock_dir = "on", tmp_path / "locks"
    settings.harness.share_until_timing = True
    with Pipeline("cpu", settings) as pipeline:
        compiling = hold(settings.harness.device_lock_dir, "cpu", 20, shared=True)  # another lane compiling
        try:
            [failed] = pipeline.judge([(problem("scale_relu"), candidate("fault_exception"))])
            assert (failed.status, failed.reason) == ("runtime_error", "exception")
            assert failed.details["device_turn"]["alone_s"] == 0.0  # it never asked for the device alone
            assert pipeline.stats.device_lock_wait_s < 10  # nor waited for the other lane's shared part
        finally:
            kill(compiling)
        compiling = hold(settings.harness.device_lock_dir, "cpu", 4.0, shared=True)
        [result] = pipeline.judge([(problem("scale_relu"), candidate("honest_scale_relu"))])
        compiling.wait(timeout=30)
    assert result.status == "ok", result.message
    turn = result.details["device_turn"]
    assert turn["waited_alone_s"] > 1.0 and turn["alone_s"] > 0 and turn["shared_s"] > 0
    assert "waiting for the device" in result.details["phase_s"]
    assert result.elapsed_s < turn["shared_s"] + turn["alone_s"] + 1.0  # the wait is not the job's time
    assert pipeline.stats.device_lock_wait_s > 1.0 and pipeline.stats.judged == 2


def test_a_verdict_timed_without_its_turn_alone_is_void(settings, tmp_path):
    settings.harness.device_lock, settings.harness.device_lock_dir = "on", tmp_path / "locks"
    settings.harness.share_until_timing = True
    with Pipeline("cpu", settings) as pipeline:
        lane = pipeline.lanes[0]
        lane.worker.start()
        job = make_job(problem("scale_relu"), candidate("honest_scale_relu"), "cpu", settings, True)
        result = lane.run_shared_until_timing(job)  # the job never asks for the turn: it times sharing the device
    assert (result.status, result.reason) == ("runtime_error", "worker_error")
    assert "without holding the device alone" in result.message


def test_sharing_until_timing_a_job_that_ran_out_of_gpu_memory_is_judged_again_alone(settings, tmp_path):
    settings.harness.device_lock, settings.harness.device_lock_dir = "on", tmp_path / "locks"
    settings.harness.share_until_timing = True
    with Pipeline("cpu", settings) as pipeline:
        [result] = pipeline.judge([(problem("scale_relu"), candidate("fault_gpu_out_of_memory"))])
    assert (result.status, result.reason) == ("runtime_error", "gpu_out_of_memory")
    assert "CUDA out of memory" in result.details["judged_alone_after"]  # what the shared judgment ran into
    assert "device_turn" not in result.details  # the verdict's judgment held the device alone throughout
    assert pipeline.stats.judged == 1


AUTOTUNING = """
import torch
import torch.nn as nn
from torch._inductor.runtime.benchmarking import benchmarker


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.tuned = False

    def forward(self, x):
        if not self.tuned:  # a runtime autotuner: its first call times its choices with Inductor's benchmarker
            benchmarker.benchmark(lambda: torch.relu(x), device="cpu", warmup=1, rep=1)
            self.tuned = True
        return torch.relu(x) * self.scale
"""


def test_sharing_until_timing_autotunings_benchmarks_hold_the_device_alone(settings, tmp_path):
    settings.harness.device_lock, settings.harness.device_lock_dir = "on", tmp_path / "locks"
    settings.harness.share_until_timing = True
    with Pipeline("cpu", settings) as pipeline:
        [result] = pipeline.judge([(problem("scale_relu"), AUTOTUNING)])
    assert result.status == "ok", result.message
    turn = result.details["device_turn"]
    assert turn["benchmarks"] >= 1 and turn["benchmarking_s"] > 0 and turn["alone_s"] > 0


PROBE = """
import fcntl, os, sys, time
lock, turnstile = (os.open(path, os.O_RDWR | os.O_CREAT, 0o666) for path in sys.argv[1:3])
print("probing", flush=True)
def free(fd):
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
while free(lock):  # until the job holds the device
    fcntl.flock(lock, fcntl.LOCK_UN)
    time.sleep(0.005)
while not free(lock):  # until it lets it go
    time.sleep(0.01)
print("alone", time.monotonic(), flush=True)
while free(turnstile):  # measuring, until the job waits at the turnstile to take the device back
    fcntl.flock(turnstile, fcntl.LOCK_UN)
    time.sleep(0.01)
time.sleep(1.0)
"""


def test_sharing_until_timing_a_compiling_job_lets_the_device_go_and_waits_to_take_it_back(settings, tmp_path):
    from kernelpro.recipes.catalogue import recipes_for

    settings.harness.device_lock, settings.harness.device_lock_dir = "on", tmp_path / "locks"
    settings.harness.share_until_timing, settings.harness.timing_budget_s = True, 0.5
    settings.harness.release_while_compiling = "on"  # auto releases on GPUs only
    scale_relu = problem("scale_relu")
    compiled = next(r.source for r in recipes_for(scale_relu, "cpu") if r.name == "compile_default")
    with Pipeline("cpu", settings) as pipeline:
        pipeline.lanes[0].worker.start()
        files = [settings.harness.device_lock_dir / f"{device_key('cpu')}.{name}" for name in ("lock", "turnstile")]
        files[0].parent.mkdir(parents=True, exist_ok=True)
        measuring = subprocess.Popen([sys.executable, "-c", PROBE, *map(str, files)], stdout=subprocess.PIPE,
                                     text=True, start_new_session=True)  # another lane's measurement
        try:
            assert measuring.stdout.readline().strip() == "probing"
            [result] = pipeline.judge([(scale_relu, compiled)])
            ended = time.monotonic()
            line = measuring.stdout.readline().split()
        finally:
            kill_alive(measuring)
    assert result.status == "ok" and result.speedup is not None, result.message
    assert line[:1] == ["alone"] and float(line[1]) < ended  # it measured while the job was compiling
    turn = result.details["device_turn"]
    assert turn["released_s"] > 0.5 and turn["alone_s"] > 0 and turn["shared_s"] > 0
    assert turn["waited_shared_s"] > 0.8  # its compile over, it waited for the measurement to end
    held = turn["shared_s"] + turn["released_s"] + turn["alone_s"]
    assert turn["taken_back"] == 1 and result.elapsed_s < held + 1.0  # waits are not the job's time
