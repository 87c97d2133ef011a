"""Dynamic guards: what the candidate actually did when it ran, checked around each call inside the worker."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import psutil
import torch

from kernelpro.harness import cuda_driver
from kernelpro.harness.guards import chunked
from kernelpro.harness.guards.call_trace import trace_events
from kernelpro.harness.guards.compare import flatten
from kernelpro.harness.result import GuardFinding


def finding(reason: str, message: str, severity: str = "reject") -> GuardFinding:
    return GuardFinding(reason=reason, severity=severity, source="dynamic", message=message)


class ActivityBaseline:
    """Threads and child processes that existed before the candidate ran."""

    def __init__(self) -> None:
        self.threads = _thread_ids()
        self.children = _child_pids()

    def leftovers(self) -> list[GuardFinding]:
        """Threads or processes the candidate started that are still alive after its call returned."""
        found: list[GuardFinding] = []
        new_threads = _thread_ids() - self.threads
        if new_threads:
            names = [t.name for t in threading.enumerate() if t.ident in new_threads] or ["(unnamed)"]
            found.append(finding("background_thread",
                                 f"{len(new_threads)} thread(s) still running after the call returned: "
                                 f"{', '.join(names)}"))
        new_children = _processes(_child_pids() - self.children)  # cheap: this runs after every timed call
        if new_children:
            found.append(finding("background_process",
                                 f"{len(new_children)} child process(es) started: "
                                 + ", ".join(f"pid {p.pid}" for p in new_children)))
            for child in new_children:
                try:
                    child.kill()
                except psutil.Error:
                    pass
        return found


def _child_pids() -> set[int]:
    """This process's direct children, from /proc (a child that is gone cannot be hiding a grandchild that is
    not: orphans are reparented, which psutil's recursive walk misses too); psutil where /proc lacks the files."""
    try:
        pids: set[int] = set()
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as file:
                pids.update(int(pid) for pid in file.read().split())
        return pids
    except OSError:
        return {p.pid for p in psutil.Process().children()}


def _processes(pids: set[int]) -> list[psutil.Process]:
    """These processes and their descendants, skipping any that already exited."""
    found = []
    for pid in sorted(pids):
        try:
            process = psutil.Process(pid)
            found += [process, *process.children(recursive=True)]
        except psutil.Error:
            pass
    return found


def _thread_ids() -> set[int]:
    # _current_frames also sees threads started with _thread, which threading.enumerate misses.
    return set(sys._current_frames()) | {t.ident for t in threading.enumerate() if t.ident is not None}


def mutated_inputs(before: Sequence[Any], after: Sequence[Any]) -> list[int]:
    """Indices of tensor inputs whose values changed during the call (NaNs compared as equal)."""
    return [i for i, (old, new) in enumerate(zip(before, after, strict=True))
            if isinstance(old, torch.Tensor) and not _same_values(old, new)]


def _same_values(old: torch.Tensor, new: torch.Tensor) -> bool:
    """Equal shapes and values, a slice at a time (``chunked``): no copy of a large input is made."""
    if old.shape != new.shape or old.dtype != new.dtype:
        return False
    if not old.is_floating_point():
        return torch.equal(old, new)
    old_row, new_row = chunked.flat(old), chunked.flat(new)
    return all(torch.equal(old_row[part].nan_to_num(), new_row[part].nan_to_num())
               for part in chunked.slices(old_row.numel()))


def aliased_outputs(inputs: Sequence[Any], output: Any) -> list[str]:
    """Output paths whose storage is shared with an input tensor."""
    storages = {x.untyped_storage().data_ptr() for x in inputs
                if isinstance(x, torch.Tensor) and x.numel() and type(x) is torch.Tensor}
    return [path for path, leaf in flatten(output)
            if type(leaf) is torch.Tensor and leaf.numel() and leaf.untyped_storage().data_ptr() in storages]


def l2_persistence_raised(baseline: int) -> GuardFinding | None:
    """A finding if the persisting-L2 limit rose above ``baseline`` (what the judge left it at)."""
    limit = cuda_driver.persisting_l2_limit()
    if limit is not None and limit > baseline:
        return finding("l2_persistence", f"the persisting-L2 limit was raised from {baseline} to {limit} bytes")
    return None


def streams_used(fn: Callable[..., Any], args: list[Any]) -> tuple[int | None, set[int]]:
    """Run ``fn`` once under the CUDA profiler; return the current stream's id and every stream GPU work ran on.

    A marker kernel launched first on the current stream tells which id the profiler gave that stream.
    """
    from torch.profiler import ProfilerActivity, profile

    marker = torch.empty(1, device="cuda")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        marker.fill_(7.0)
        fn(*args)
        torch.cuda.synchronize()
    events = trace_events(prof)
    gpu = sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                  and "stream" in e.get("args", {})), key=lambda e: e.get("ts", 0))
    if not gpu:
        return None, set()
    current = gpu[0]["args"]["stream"]  # the marker
    return current, {e["args"]["stream"] for e in gpu[1:]}
