"""Stage 2 of micro-profiling: one pure function per bottleneck family, KernelMetrics + GpuSpecs -> findings.

Each diagnoser checks only what its metrics show, returns [] when the bottleneck is absent or its metrics were
not collected, and writes findings an engineer would: the cause, the evidence with its threshold, and remedies
with numbers from the profile. Which diagnosers run for a kernel is stage 1's choice (roofline.py).
"""

from __future__ import annotations

from collections.abc import Callable

from kernelpro.profiling.diagnosers.atomics import diagnose_atomic_contention
from kernelpro.profiling.diagnosers.barriers import diagnose_barrier_stalls
from kernelpro.profiling.diagnosers.compute import diagnose_compute_bound
from kernelpro.profiling.diagnosers.divergence import diagnose_warp_divergence
from kernelpro.profiling.diagnosers.global_access import diagnose_uncoalesced_global
from kernelpro.profiling.diagnosers.latency import diagnose_memory_latency_bound
from kernelpro.profiling.diagnosers.launch import diagnose_launch_overhead, diagnose_low_parallelism
from kernelpro.profiling.diagnosers.memory import diagnose_memory_bound
from kernelpro.profiling.diagnosers.occupancy import diagnose_occupancy_limited
from kernelpro.profiling.diagnosers.shared_memory import diagnose_smem_bank_conflicts
from kernelpro.profiling.diagnosers.spills import diagnose_register_spills
from kernelpro.profiling.diagnosers.tensor_cores import diagnose_tensor_cores_unused
from kernelpro.profiling.findings import Finding
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.metrics import KernelMetrics

Diagnoser = Callable[[KernelMetrics, GpuSpecs], list[Finding]]

# Finding id -> the diagnoser that emits it.
DIAGNOSERS: dict[str, Diagnoser] = {
    "memory_bound": diagnose_memory_bound,
    "compute_bound": diagnose_compute_bound,
    "memory_latency_bound": diagnose_memory_latency_bound,
    "launch_overhead": diagnose_launch_overhead,
    "low_parallelism": diagnose_low_parallelism,
    "occupancy_limited": diagnose_occupancy_limited,
    "register_spills": diagnose_register_spills,
    "uncoalesced_global": diagnose_uncoalesced_global,
    "smem_bank_conflicts": diagnose_smem_bank_conflicts,
    "warp_divergence": diagnose_warp_divergence,
    "barrier_stalls": diagnose_barrier_stalls,
    "atomic_contention": diagnose_atomic_contention,
    "tensor_cores_unused": diagnose_tensor_cores_unused,
}

__all__ = ["DIAGNOSERS", "Diagnoser"]
