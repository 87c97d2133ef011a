"""Timing the reference and the candidate the same way, in the same worker.

The clocks are bound here, when the worker imports this module, before any candidate code runs: a candidate
that replaces ``time.perf_counter`` or ``torch.cuda.Event.elapsed_time`` changes nothing this module calls.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from kernelpro.config import HarnessSettings
from kernelpro.harness import cuda_driver
from kernelpro.harness.result import Timing

_perf_counter_ns = time.perf_counter_ns
_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed = torch.cuda.Event.elapsed_time
_event_synchronize = torch.cuda.Event.synchronize
_device_synchronize = torch.cuda.synchronize

Inputs = Sequence[Any]


def clone_inputs(inputs: Inputs) -> list[Any]:
    """Fresh copies of every tensor (new storage); other values are passed as they are."""
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


class CpuClock:
    """A monotonic host clock around the call."""

    method = "cpu perf_counter_ns"

    def prepare(self) -> None:
        pass

    def time(self, fn: Callable[..., Any], args: list[Any]) -> tuple[float, float, Any]:
        start = _perf_counter_ns()
        out = fn(*args)
        elapsed_ms = (_perf_counter_ns() - start) / 1e6
        return elapsed_ms, elapsed_ms, out


class CudaClock:
    """CUDA events around the call, with a device-wide synchronise before the end event.

    The synchronise makes work the call left on any stream count; L2 is flushed and persisting lines
    dropped before every call so no trial starts with the last one's data in cache.
    """

    method = "cuda events, device-wide sync, L2 flushed"

    def __init__(self, device: torch.device, flush_bytes: int = 0) -> None:
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        self._flush = torch.empty(flush_bytes or max(4 * l2, 64 << 20), dtype=torch.uint8, device=device)
        self._start, self._end = _Event(enable_timing=True), _Event(enable_timing=True)

    def prepare(self) -> None:
        cuda_driver.reset_persisting_l2()
        self._flush.zero_()
        _device_synchronize()

    def time(self, fn: Callable[..., Any], args: list[Any]) -> tuple[float, float, Any]:
        host_start = _perf_counter_ns()
        _event_record(self._start)
        out = fn(*args)
        _device_synchronize()
        _event_record(self._end)
        _event_synchronize(self._end)
        host_ms = (_perf_counter_ns() - host_start) / 1e6
        return _event_elapsed(self._start, self._end), host_ms, out


def make_clock(device: torch.device, settings: HarnessSettings) -> CpuClock | CudaClock:
    return CudaClock(device, settings.l2_flush_bytes) if device.type == "cuda" else CpuClock()


def summarise(samples: list[float], host_samples: list[float], method: str) -> Timing:
    ordered = sorted(samples)
    decile = max(0, len(ordered) // 10)
    return Timing(
        median_ms=statistics.median(ordered),
        p10_ms=ordered[decile],
        p90_ms=ordered[-1 - decile],
        mean_ms=statistics.fmean(ordered),
        trials=len(ordered),
        method=method,
        host_median_ms=statistics.median(host_samples),
    )


def plan_trials(estimates_ms: Sequence[float], settings: HarnessSettings) -> int:
    """As many trials as the time budget allows, within [min_timing_trials, timing_trials]."""
    per_round_s = max(sum(estimates_ms), 1e-6) / 1e3
    affordable = int(settings.timing_budget_s / per_round_s)
    return max(settings.min_timing_trials, min(settings.timing_trials, affordable))


def time_models(
    models: dict[str, Callable[..., Any]],
    input_pool: Sequence[Inputs],
    clock: CpuClock | CudaClock,
    settings: HarnessSettings,
    after_call: Callable[[str, int, Any], None] = lambda name, pool_index, out: None,
) -> dict[str, Timing]:
    """Warm up, then time the models in alternating order on fresh copies of pooled inputs.

    ``after_call(name, pool_index, output)`` runs after every call, outside the timed region: the caller
    checks each output there, so a replayed or unfinished result cannot hide in any timed call.
    """
    names = list(models)
    estimates: dict[str, list[float]] = {name: [] for name in names}
    for name in names:
        for i in range(max(1, settings.warmup)):
            args = clone_inputs(input_pool[i % len(input_pool)])
            clock.prepare()
            _, host_ms, out = clock.time(models[name], args)
            estimates[name].append(host_ms)
            after_call(name, i % len(input_pool), out)
            del out
    trials = plan_trials([statistics.median(v) for v in estimates.values()], settings)

    samples: dict[str, list[float]] = {name: [] for name in names}
    host: dict[str, list[float]] = {name: [] for name in names}
    for trial in range(trials):
        pool_index = trial % len(input_pool)
        for name in names if trial % 2 == 0 else reversed(names):
            args = clone_inputs(input_pool[pool_index])  # prepared outside the timed region
            clock.prepare()
            elapsed_ms, host_ms, out = clock.time(models[name], args)
            samples[name].append(elapsed_ms)
            host[name].append(host_ms)
            del args
            after_call(name, pool_index, out)
            del out
    return {name: summarise(samples[name], host[name], clock.method) for name in names}
