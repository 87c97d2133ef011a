"""Energy per call from NVML's total-energy counter.

The counter (millijoules since the driver loaded) advances only about every 100 ms, so one call cannot be
measured: the call is repeated for ``min_seconds`` or more and the energy divided by the number of calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_perf_counter = time.perf_counter  # bound before any candidate code runs, like the timers


@dataclass(frozen=True)
class EnergyReading:
    joules_per_call: float
    average_watts: float
    calls: int
    seconds: float


class EnergyUnavailable(RuntimeError):
    """NVML is missing, or this GPU has no energy counter."""


def _counter(device_index: int) -> Callable[[], int]:
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    except Exception as exc:  # noqa: BLE001 - any NVML failure means no energy figures
        raise EnergyUnavailable(f"no NVML energy counter: {exc}") from None
    return lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)


def unavailable(device_index: int = 0) -> str | None:
    """Why energy cannot be measured on this device, or None when it can."""
    try:
        _counter(device_index)
    except EnergyUnavailable as exc:
        return str(exc)
    return None


def measure_energy(call: Callable[[], Any], synchronize: Callable[[], None], device_index: int = 0,
                   min_seconds: float = 1.0, batch: int = 8) -> EnergyReading:
    """Repeat ``call`` for at least ``min_seconds`` and until the counter has moved; joules per call and watts."""
    read = _counter(device_index)
    synchronize()
    start_mj, start = read(), _perf_counter()
    calls = 0
    while True:
        for _ in range(batch):
            call()
        calls += batch
        synchronize()
        elapsed = _perf_counter() - start
        if elapsed >= min_seconds and read() > start_mj:
            break
    used_j = (read() - start_mj) / 1000.0
    return EnergyReading(joules_per_call=used_j / calls, average_watts=used_j / elapsed, calls=calls,
                         seconds=elapsed)
