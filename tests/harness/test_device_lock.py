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
from kernelpro.harness.device_lock import device_key, device_lock
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
    warming = hold(tmp_path, "cuda:0", 2.0, shared=True)
    try:
        with device_lock("cuda:0", harness, shared=True) as waited:
            assert waited < 1.0  # two warm-ups at once
        with device_lock("cuda:0", harness) as waited:
            assert waited > 0.5  # a measurement waits for the warm-up to end
        warming.wait(timeout=30)
        measuring = hold(tmp_path, "cuda:0", 2.0)
        with device_lock("cuda:0", harness, shared=True) as waited:
            assert waited > 0.5  # and a warm-up for the measurement
        measuring.wait(timeout=30)
        # A measurement waiting behind a warm-up holds the turnstile: a warm-up asking after it waits for it too.
        warming = hold(tmp_path, "cuda:0", 2.0, shared=True)
        measuring = hold(tmp_path, "cuda:0", 2.0, wait=False)
        time.sleep(1.0)  # it is waiting now
        start = time.monotonic()
        with device_lock("cuda:0", harness, shared=True):
            # the measurement had its turn first (were this warm-up let in ahead of it, it would still be waiting)
            assert measuring.wait(timeout=20) == 0
        assert time.monotonic() - start > 2.5
    finally:
        for proc in (warming, measuring):
            if proc.poll() is None:
                kill(proc)


def test_with_shared_warm_ups_a_failing_first_call_is_the_verdict_without_an_exclusive_turn(settings, tmp_path):
    settings.harness.device_lock, settings.harness.device_lock_dir = "on", tmp_path / "locks"
    settings.harness.warm_up_shared = True
    with Pipeline("cpu", settings) as pipeline:
        warming = hold(settings.harness.device_lock_dir, "cpu", 20, shared=True)  # another lane warming up
        try:
            [failed] = pipeline.judge([(problem("scale_relu"), candidate("fault_exception"))])
            assert (failed.status, failed.reason) == ("runtime_error", "exception")
            assert "correctness trial 1/" in failed.message  # as the judgment's first call would have said
            assert pipeline.stats.device_lock_wait_s < 10  # it never waited for the other warm-up to end
        finally:
            kill(warming)
        holder = hold(settings.harness.device_lock_dir, "cpu", 3.0, shared=True)
        [result] = pipeline.judge([(problem("scale_relu"), candidate("honest_scale_relu"))])
        holder.wait(timeout=30)
    assert result.status == "ok", result.message
    assert result.details["warm_up_s"] > 0 and result.elapsed_s > result.details["warm_up_s"]
    assert pipeline.stats.device_lock_wait_s > 1.0  # its judgment waited for the other warm-up; its own did not
    assert pipeline.stats.judged == 2
