"""One candidate call under the CUDA profiler: what ran on which stream, and when the caller's stream got past it.

The judge plants two marker kernels on the caller's (current) stream, one just before the call and one just
after it returns, and holds the caller's stream (a spin kernel) while the call is issued. The opening marker
tells which id the profiler gave that stream. The closing marker starts only once everything the caller's
stream was ordered to wait for has finished: its own work and, through ``wait_stream``/``wait_event``, any
side stream's work joined to it. Side-stream work that ends after the closing marker starts was not waited
for: the output races its consumer (``extra_stream``). Side-stream work that ends earlier without a join (it
does not wait for the caller's stream either) is not caught here; the clock's device-wide completion check
still times it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
HOLD_CYCLES = 50_000_000  # about 25 ms at 2 GHz: longer than issuing any but the largest models takes


@dataclass(frozen=True)
class GpuActivity:
    """A kernel, copy or memset the call put on the GPU. Times in microseconds on the device's clock."""

    name: str
    category: str
    stream: int
    start_us: float
    end_us: float


@dataclass
class CallTrace:
    """The GPU work of one call, and the stream it was called on."""

    current: int | None = None
    finished_us: float | None = None
    """When the closing marker started on the caller's stream: the call's completion as a consumer sees it."""
    activities: list[GpuActivity] = field(default_factory=list)

    def unjoined(self) -> list[GpuActivity]:
        """Work on other streams that was still running when the caller's stream moved past the call."""
        if self.current is None or self.finished_us is None:
            return []
        return [a for a in self.activities if a.stream != self.current and a.end_us > self.finished_us]

    def side_streams(self) -> set[int]:
        return {a.stream for a in self.activities if a.stream != self.current}

    def kernel_names(self) -> list[str]:
        return [a.name for a in self.activities if a.category == "kernel"]

    def describe_unjoined(self) -> str:
        late = self.unjoined()
        names = ", ".join(dict.fromkeys(a.name.split("(")[0][:60] for a in late[:3]))
        worst = max(a.end_us for a in late) - (self.finished_us or 0.0)
        return (f"{len(late)} GPU operation(s) on stream(s) {sorted({a.stream for a in late})} were still running "
                f"{worst:.1f} us after the caller's stream ({self.current}) moved past the call ({names}): join "
                "side streams to the current stream before returning (current_stream().wait_stream(side))")


def trace_call(fn: Callable[..., Any], args: list[Any]) -> CallTrace:
    """Run ``fn(*args)`` once under the CUDA profiler, between the two markers."""
    from torch.profiler import ProfilerActivity, profile

    marker = torch.empty(1, device="cuda")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        marker.fill_(7.0)
        # Hold the caller's stream while the call is issued: a side stream that waits for it (as it must, to read
        # the inputs) then starts together with the closing marker, so any of its work that the caller's stream
        # does not wait for ends after that marker starts, however short it is.
        torch.cuda._sleep(HOLD_CYCLES)
        fn(*args)
        marker.fill_(8.0)
        torch.cuda.synchronize()
    return parse_trace(trace_events(prof))


def trace_events(prof: Any) -> list[dict[str, Any]]:
    """A finished torch profiler's events, as its Chrome trace lists them."""
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(trace_path)
        with open(trace_path) as handle:
            return json.load(handle).get("traceEvents", [])


def parse_trace(events: list[dict[str, Any]]) -> CallTrace:
    """A ``CallTrace`` from chrome-trace events whose first GPU event is the opening marker and whose last one on
    that stream is the closing marker."""
    gpu = sorted((e for e in events if e.get("cat") in GPU_CATEGORIES and "stream" in e.get("args", {})),
                 key=lambda e: float(e.get("ts", 0)))
    if not gpu:
        return CallTrace()
    current = gpu[0]["args"]["stream"]
    on_current = [i for i, e in enumerate(gpu) if e["args"]["stream"] == current]
    closing = on_current[-1] if len(on_current) > 1 else None
    inner = [e for i, e in enumerate(gpu) if i != 0 and i != closing]
    activities = [GpuActivity(name=str(e.get("name", "")), category=e["cat"], stream=e["args"]["stream"],
                              start_us=float(e["ts"]), end_us=float(e["ts"]) + float(e.get("dur", 0.0)))
                  for e in inner]
    finished = float(gpu[closing]["ts"]) if closing is not None else None
    return CallTrace(current=current, finished_us=finished, activities=activities)
