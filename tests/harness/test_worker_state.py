"""The reset between candidates, in this process: what it restores, and what it reports as beyond repair."""

from __future__ import annotations

import gc
import os
import threading
import weakref

import pytest
import torch

from kernelpro.harness.worker import state as worker_state


@pytest.fixture(autouse=True)
def _unfreeze():
    """``capture`` freezes the process's objects out of the collector, as a worker wants; not the test runner's."""
    yield
    gc.unfreeze()


def test_reset_restores_torch_flags_and_the_environment(tmp_path):
    baseline = worker_state.capture(torch.device("cpu"), [0, 1, 2])
    home = os.getcwd()
    try:
        torch.set_default_dtype(torch.float64)
        torch.backends.cudnn.benchmark = True
        os.environ["KERNELPRO_LEFTOVER"] = "1"
        os.chdir(tmp_path)
        assert worker_state.reset(baseline) == []
        assert torch.get_default_dtype() == torch.float32 and not torch.backends.cudnn.benchmark
        assert "KERNELPRO_LEFTOVER" not in os.environ and os.getcwd() == home
    finally:
        torch.set_default_dtype(torch.float32)
        torch.backends.cudnn.benchmark = False
        os.chdir(home)


def test_replaced_functions_and_leftover_threads_are_problems():
    baseline = worker_state.capture(torch.device("cpu"), [0, 1, 2])
    original = torch.nn.functional.relu
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    try:
        torch.nn.functional.relu = lambda x, inplace=False: x
        thread.start()
        problems = worker_state.reset(baseline)
    finally:
        stop.set()
        thread.join()
        torch.nn.functional.relu = original
    assert any("torch.nn.functional.relu was replaced" in p for p in problems)
    assert any("threads are still running" in p for p in problems)
    assert torch.nn.functional.relu is original  # put back on the way


def test_an_active_torch_mode_is_a_problem():
    from torch.overrides import TorchFunctionMode

    baseline = worker_state.capture(torch.device("cpu"), [0, 1, 2])
    mode = TorchFunctionMode()
    mode.__enter__()
    try:
        problems = worker_state.reset(baseline)
    finally:
        mode.__exit__(None, None, None)
    assert any("torch function or dispatch mode" in p for p in problems)


def test_values_torch_caches_lazily_are_not_tampering():
    saved = torch.cuda._cached_device_count
    torch.cuda._cached_device_count = None  # as in a process that has not asked yet
    baseline = worker_state.capture(torch.device("cpu"), [0, 1, 2])
    try:
        torch.cuda._cached_device_count = 1  # what torch.cuda.device_count() does on a GPU machine's first call
        assert worker_state.reset(baseline) == []
        assert torch.cuda._cached_device_count == 1  # a cache, left as torch set it
    finally:
        torch.cuda._cached_device_count = saved


def test_the_reset_collects_a_candidates_reference_cycles_with_the_workers_objects_frozen():
    class Holder:  # e.g. a module that keeps a reference to itself, and a large buffer
        def __init__(self) -> None:
            self.me = self
            self.buffer = torch.empty(1 << 20)

    baseline = worker_state.capture(torch.device("cpu"), [0, 1, 2])
    assert gc.get_freeze_count() > 0  # the worker's own objects are left out of every collection
    holder = Holder()
    gone = weakref.ref(holder)
    del holder
    assert gone() is not None  # a cycle: only the collector can free it
    assert worker_state.reset(baseline) == []
    assert gone() is None
