"""Energy per call from NVML's total-energy counter, with the card's state beside every reading.

The counter (millijoules since the driver loaded) advances only about every 100 ms, so one call cannot be
measured: a reading repeats the call for ``min_seconds`` or more and divides the energy by the number of
calls. Beside each reading: the SM clock, the temperature, the enforced power limit and every clock-event
reason NVML reported while it ran, so a reading taken while the card was power- or thermally capped is
marked (``capped``) instead of being compared with one taken at full clocks.

``paired_readings`` takes several readings per model in alternating order (ABBA...), so a drift of the card's
temperature or clocks reaches both models alike; ``harness.stats`` turns them into an interval.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

_perf_counter = time.perf_counter  # bound before any candidate code runs, like the timers

# NVML's clock-event (throttle) reason bits that mean the card ran below its clocks for power or heat
# (nvmlClocksEventReason*; the idle and application-clock bits are not caps).
CAP_REASONS = {0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal", 0x40: "hw_thermal",
               0x80: "hw_power_brake"}


@dataclass(frozen=True)
class EnergyReading:
    joules_per_call: float
    average_watts: float
    calls: int
    seconds: float
    sm_clock_mhz: float | None = None
    temperature_c: float | None = None
    power_limit_w: float | None = None
    capped: list[str] = field(default_factory=list)
    """The cap reasons NVML reported at any check during the reading (``CAP_REASONS``); empty at full clocks."""

    @property
    def seconds_per_call(self) -> float:
        return self.seconds / self.calls

    def as_dict(self) -> dict[str, Any]:
        return {key: (round(value, 6) if isinstance(value, float) else value) for key, value in asdict(self).items()}


class EnergyUnavailable(RuntimeError):
    """NVML is missing, or this GPU has no energy counter."""


def cap_reasons(bits: int) -> list[str]:
    """The names of the cap reasons set in an NVML clock-event bit mask."""
    return [name for bit, name in CAP_REASONS.items() if bits & bit]


def nvml_index(device_index: int) -> int:
    """The NVML index of CUDA device ``device_index``: NVML numbers the host's GPUs whatever
    ``CUDA_VISIBLE_DEVICES`` says, CUDA numbers those it lists (a suite lane's GPU 5 is its CUDA device 0), so
    without this every lane would read GPU 0's counter. Torch's own mapping, which reads UUIDs too."""
    try:
        import torch

        return int(torch.cuda._get_nvml_device_index(device_index))
    except Exception:  # noqa: BLE001 - no such mapping in this torch, or a list it cannot read: the index as is
        return device_index


class _Card:
    """The NVML queries a reading needs, on one device; any query but the counter may be missing."""

    def __init__(self, device_index: int) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(nvml_index(device_index))
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except Exception as exc:  # noqa: BLE001 - any NVML failure means no energy figures
            raise EnergyUnavailable(f"no NVML energy counter: {exc}") from None
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            getattr(pynvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        self._reasons = reasons

    def millijoules(self) -> int:
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)

    def _query(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception:  # noqa: BLE001 - a card without the query reports nothing for it
            return None

    def reason_bits(self) -> int:
        return (self._query(lambda: self._reasons(self.handle)) or 0) if self._reasons else 0

    def state(self) -> dict[str, float | None]:
        nvml, handle = self.nvml, self.handle
        clock = self._query(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
        temperature = self._query(lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))
        limit_mw = self._query(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
        return {"sm_clock_mhz": float(clock) if clock is not None else None,
                "temperature_c": float(temperature) if temperature is not None else None,
                "power_limit_w": limit_mw / 1000.0 if limit_mw is not None else None}


def unavailable(device_index: int = 0) -> str | None:
    """Why energy cannot be measured on this device, or None when it can."""
    try:
        _Card(device_index)
    except EnergyUnavailable as exc:
        return str(exc)
    return None


def measure_energy(call: Callable[[], Any], synchronize: Callable[[], None], device_index: int = 0,
                   min_seconds: float = 1.0, batch: int = 8, card: _Card | None = None) -> EnergyReading:
    """Repeat ``call`` for at least ``min_seconds`` and until the counter has moved: joules per call, watts,
    and the card's clock, temperature, power limit and cap reasons while it ran."""
    card = card or _Card(device_index)
    synchronize()
    start_mj, start = card.millijoules(), _perf_counter()
    calls, reasons = 0, 0
    while True:
        for _ in range(batch):
            call()
        calls += batch
        synchronize()
        reasons |= card.reason_bits()
        elapsed = _perf_counter() - start
        if elapsed >= min_seconds and card.millijoules() > start_mj:
            break
    used_j = (card.millijoules() - start_mj) / 1000.0
    return EnergyReading(joules_per_call=used_j / calls, average_watts=used_j / elapsed, calls=calls,
                         seconds=elapsed, capped=cap_reasons(reasons), **card.state())


def paired_readings(calls: dict[str, Callable[[], Any]], synchronize: Callable[[], None], device_index: int = 0,
                    min_seconds: float = 1.0, repeats: int = 3) -> dict[str, list[EnergyReading]]:
    """``repeats`` readings per model, in alternating order (A B, then B A, ...), each of ``min_seconds``."""
    card = _Card(device_index)
    names = list(calls)
    readings: dict[str, list[EnergyReading]] = {name: [] for name in names}
    for i in range(max(1, repeats)):
        for name in names if i % 2 == 0 else names[::-1]:
            readings[name].append(measure_energy(calls[name], synchronize, device_index, min_seconds, card=card))
    return readings
