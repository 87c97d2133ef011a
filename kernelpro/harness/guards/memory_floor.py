"""A floor on a call's time from the bytes it must move: its inputs read once and its outputs written once, at
the GPU's peak DRAM bandwidth. A candidate measured below it skipped work (legitimately, at times: an input it
need not read), or its timing is wrong; either way the user should look (``below_memory_floor``, a warning).

The harness does not import the agents' tools, so the bandwidth lookup is its own: the larger of NVML's figure
(memory clock, double data rate, bus width) and the datasheet's for the GPUs it knows, so the floor stays low.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from kernelpro.harness.guards.compare import flatten
from kernelpro.harness.result import GuardFinding

# Datasheet DRAM bandwidth in GB/s (1e9 bytes), matched against the device name in order.
PEAK_GBS = [("H200", 4800.0), ("H100 PCIe", 2000.0), ("H100", 3350.0), ("H20", 4000.0), ("B200", 8000.0),
            ("A100", 2039.0), ("L40S", 864.0), ("L40", 864.0), ("RTX 4090", 1008.0), ("RTX 3090", 936.0)]
# Below a few microseconds the clock's own resolution and overhead correction dominate: no floor there.
MIN_FLOOR_MS = 0.005


def peak_bandwidth_gbs(device: torch.device) -> float | None:
    """The device's peak DRAM bandwidth, or None where neither NVML nor the table knows it."""
    index = device.index or 0
    name = torch.cuda.get_device_name(index).replace("-", " ")
    table = next((gbs for key, gbs in PEAK_GBS if key in name), None)
    return max(filter(None, [table, _nvml_gbs(index)]), default=None)


def _nvml_gbs(index: int) -> float | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            mem_mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)
            bus_bits = pynvml.nvmlDeviceGetMemoryBusWidth(handle)
            return 2 * mem_mhz * 1e6 * bus_bits / 8 / 1e9 or None
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML is optional; the table fills in
        return None


def compulsory_bytes(inputs: Sequence[Any], outputs: Any) -> int:
    """Bytes of the distinct tensor storages among the inputs and outputs."""
    seen: dict[int, int] = {}
    for _, leaf in [*flatten(list(inputs)), *flatten(outputs)]:
        if type(leaf) is torch.Tensor and leaf.numel():
            seen[leaf.untyped_storage().data_ptr()] = leaf.untyped_storage().nbytes()
    return sum(seen.values())


def floor_ms(nbytes: int, bandwidth_gbs: float) -> float:
    return nbytes / (bandwidth_gbs * 1e9) * 1e3


def below_floor(candidate_ms: float, nbytes: int, bandwidth_gbs: float | None) -> GuardFinding | None:
    """The warning when ``candidate_ms`` is under the time ``nbytes`` take at ``bandwidth_gbs``."""
    if not bandwidth_gbs:
        return None
    floor = floor_ms(nbytes, bandwidth_gbs)
    if floor < MIN_FLOOR_MS or candidate_ms >= floor:
        return None
    return GuardFinding(reason="below_memory_floor", severity="warn", source="dynamic", message=(
        f"measured {candidate_ms * 1e3:.2f} us, below the {floor * 1e3:.2f} us that reading its inputs and writing its "
        f"outputs ({nbytes / 1e6:.3g} MB) takes at the GPU's peak {bandwidth_gbs:g} GB/s: it skips work, or "
        "its timing is wrong"))
