"""What a GPU can do: SM count, clocks, memory bandwidth, on-chip limits and peak rates.

Peaks come from a table of known GPUs (dense rates from the vendors' datasheets, no sparsity). What the
device itself reports (SM count, L2, memory, clocks and bus width through NVML) overrides the table, so a
part with another SKU's clocks still gets its own numbers. An unknown GPU gets its FP32 peak estimated from
its SM count and clock and no tensor-core peaks, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

# FP32 lanes per SM by compute capability major.minor: peak FP32 = 2 x lanes x SMs x clock.
FP32_LANES_PER_SM = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 9): 128, (9, 0): 128, (10, 0): 128}


@dataclass(frozen=True)
class GpuSpecs:
    """One GPU's limits. Rates in TFLOP/s (dense), bandwidth in GB/s (1e9 bytes), sizes in bytes."""

    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    max_sm_clock_mhz: float
    memory_bandwidth_gbs: float
    memory_bytes: int
    l2_bytes: int
    smem_per_sm_bytes: int
    smem_per_block_optin_bytes: int
    registers_per_sm: int = 65536
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    peak_tflops: dict[str, float] = field(default_factory=dict)
    source: str = "table"

    def ridge_point(self, precision: str = "fp32") -> float | None:
        """FLOP per DRAM byte above which a kernel at this precision is compute-bound."""
        peak = self.peak_tflops.get(precision)
        return peak * 1e12 / (self.memory_bandwidth_gbs * 1e9) if peak else None

    def render(self) -> str:
        """A few lines an agent can read."""
        peaks = ", ".join(f"{k} {v:g}" for k, v in self.peak_tflops.items())
        return (f"{self.name} (sm_{self.compute_capability[0]}{self.compute_capability[1]}): {self.sm_count} SMs "
                f"up to {self.max_sm_clock_mhz:g} MHz; {self.memory_bytes / 2**30:.0f} GiB at "
                f"{self.memory_bandwidth_gbs / 1000:.2f} TB/s; L2 {self.l2_bytes / 2**20:.0f} MiB; shared memory "
                f"{self.smem_per_sm_bytes // 1024} KiB/SM ({self.smem_per_block_optin_bytes // 1024} KiB/block "
                f"opt-in); {self.registers_per_sm} registers, {self.max_warps_per_sm} warps and "
                f"{self.max_blocks_per_sm} blocks per SM\npeak TFLOP/s (dense): {peaks or 'unknown'}; ridge point "
                f"FP32 {self.ridge_point('fp32') or 0:.0f} FLOP/B" + (
                    f", BF16 {self.ridge_point('bf16_tensor'):.0f} FLOP/B" if "bf16_tensor" in self.peak_tflops
                    else "") + f" [{self.source}]")


_HOPPER_PEAKS = {"fp32": 66.9, "fp64": 33.5, "fp64_tensor": 66.9, "tf32_tensor": 494.7, "bf16_tensor": 989.4,
                 "fp16_tensor": 989.4, "fp8_tensor": 1978.9}

# Matched against the device name in order, so more specific names come first.
KNOWN_GPUS: list[tuple[str, GpuSpecs]] = [
    ("H200", GpuSpecs("NVIDIA H200", (9, 0), 132, 1980, 4800, 141 * 10**9, 60 * 2**20, 233472, 232448,
                      peak_tflops=_HOPPER_PEAKS)),
    ("H100 PCIe", GpuSpecs("NVIDIA H100 PCIe", (9, 0), 114, 1755, 2000, 80 * 10**9, 50 * 2**20, 233472, 232448,
                           peak_tflops={"fp32": 51.2, "fp64": 25.6, "fp64_tensor": 51.2, "tf32_tensor": 378,
                                        "bf16_tensor": 756, "fp16_tensor": 756, "fp8_tensor": 1513})),
    ("H100", GpuSpecs("NVIDIA H100 SXM", (9, 0), 132, 1980, 3350, 80 * 10**9, 50 * 2**20, 233472, 232448,
                      peak_tflops=_HOPPER_PEAKS)),
    ("A100", GpuSpecs("NVIDIA A100 SXM4", (8, 0), 108, 1410, 2039, 80 * 10**9, 40 * 2**20, 167936, 166912,
                      peak_tflops={"fp32": 19.5, "fp64": 9.7, "fp64_tensor": 19.5, "tf32_tensor": 156,
                                   "bf16_tensor": 312, "fp16_tensor": 312})),
    ("L40S", GpuSpecs("NVIDIA L40S", (8, 9), 142, 2520, 864, 48 * 10**9, 96 * 2**20, 102400, 101376,
                      max_warps_per_sm=48, max_blocks_per_sm=24,
                      peak_tflops={"fp32": 91.6, "tf32_tensor": 183, "bf16_tensor": 362, "fp16_tensor": 362,
                                   "fp8_tensor": 733})),
    ("RTX 4090", GpuSpecs("NVIDIA GeForce RTX 4090", (8, 9), 128, 2520, 1008, 24 * 10**9, 72 * 2**20, 102400,
                          101376, max_warps_per_sm=48, max_blocks_per_sm=24,
                          peak_tflops={"fp32": 82.6, "tf32_tensor": 82.6, "bf16_tensor": 165, "fp16_tensor": 165,
                                       "fp8_tensor": 330})),
]


def lookup(device_name: str) -> GpuSpecs | None:
    """The table's entry for a device name as NVML or torch reports it (``NVIDIA H200``, ``NVIDIA A100-SXM4-80GB``)."""
    normalised = device_name.replace("-", " ")
    return next((specs for key, specs in KNOWN_GPUS if key in normalised), None)


def merge_device_readings(name: str, readings: dict[str, float | int | tuple[int, int]]) -> GpuSpecs:
    """Combine what a device reports with the table (or an estimate, for a GPU the table lacks)."""
    known = lookup(name)
    if known is None:
        capability = readings.get("compute_capability", (0, 0))
        lanes = FP32_LANES_PER_SM.get(capability)  # type: ignore[arg-type]
        fp32 = (2 * lanes * int(readings["sm_count"]) * float(readings["max_sm_clock_mhz"]) * 1e6 / 1e12
                if lanes and "sm_count" in readings and "max_sm_clock_mhz" in readings else None)
        known = GpuSpecs(name, capability, 0, 0, 0, 0, 0, 0, 0,  # type: ignore[arg-type]
                         peak_tflops={"fp32": round(fp32, 1)} if fp32 else {}, source="estimated")
    fields = {k: v for k, v in readings.items() if k in GpuSpecs.__dataclass_fields__ and v}
    source = known.source if known.source == "estimated" else ("device+table" if fields else "table")
    return replace(known, name=name, source=source, **fields)


def detect(index: int = 0) -> GpuSpecs:
    """The specs of GPU ``index`` on this machine, read through torch and NVML. Raises without a GPU."""
    import torch

    props = torch.cuda.get_device_properties(index)
    readings: dict[str, float | int | tuple[int, int]] = {
        "compute_capability": (props.major, props.minor),
        "sm_count": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "l2_bytes": getattr(props, "L2_cache_size", 0),
        "smem_per_sm_bytes": getattr(props, "shared_memory_per_multiprocessor", 0),
        "smem_per_block_optin_bytes": getattr(props, "shared_memory_per_block_optin", 0),
        "registers_per_sm": getattr(props, "regs_per_multiprocessor", 0),
        "max_warps_per_sm": getattr(props, "max_threads_per_multi_processor", 0) // 32,
    }
    readings.update(_nvml_readings(index))
    return merge_device_readings(props.name, readings)


def _nvml_readings(index: int) -> dict[str, float]:
    """Top SM clock and DRAM bandwidth (double data rate x bus width) from NVML, where it answers."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            sm_mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
            mem_mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)
            bus_bits = pynvml.nvmlDeviceGetMemoryBusWidth(handle)
            return {"max_sm_clock_mhz": float(sm_mhz), "memory_bandwidth_gbs": 2 * mem_mhz * 1e6 * bus_bits / 8 / 1e9}
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML is optional; the table fills in
        return {}
