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
with device_lock(sys.argv[2], harness):
    print("held", flush=True)
    time.sleep(float(sys.argv[3]))
"""


def hold(lock_dir, device: str, seconds: float) -> subprocess.Popen:
    """Another process holding ``device``'s lock for ``seconds``; returns once it holds it."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(lock_dir), device, str(seconds)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


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
