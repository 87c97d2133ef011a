"""What a compiled kernel shows before it runs: ptxas resources, the occupancy they allow, and its SASS mix.

Rendered as a few plain lines per kernel that an LLM can act on, e.g. "spills 324 B to local memory: 38 STL /
38 LDL inside loops" or "no tensor-core instructions: the math runs on 1024 FFMA".
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from kernelpro.harness.compile import resources as ptxas_resources
from kernelpro.harness.compile.resources import KernelResources
from kernelpro.harness.compile.toolchain import find_tool
from kernelpro.profiling.gpu_specs import GpuSpecs
from kernelpro.profiling.occupancy import RESERVED_SMEM_PER_BLOCK, Occupancy, theoretical_occupancy
from kernelpro.profiling.sass import KernelSass, analyze_cubin

# Below this many FP32 math instructions a kernel is not doing matrix math worth a tensor-core remark.
TENSOR_CORE_REMARK_MIN_FP32 = 256


class KernelStatic(BaseModel):
    """One kernel's static facts and the lines they render to."""

    sass: KernelSass
    resources: KernelResources | None = None
    occupancy: str = ""
    occupancy_fraction: float | None = None
    notes: list[str] = []

    def render(self) -> str:
        return "\n".join([f"{self.sass.name}:", *(f"  - {note}" for note in self.notes)])


class StaticReport(BaseModel):
    """Every (selected) kernel of one cubin."""

    kernels: list[KernelStatic]
    gpu: str = ""
    block_size: int | None = None

    def render(self) -> str:
        return "\n".join(k.render() for k in self.kernels) if self.kernels else "no kernels in the binary"


def _bits(widths: dict[int, int]) -> str:
    return ", ".join(f"{n} x {bits}-bit" for bits, n in sorted(widths.items(), reverse=True))


def _resource_note(res: KernelResources) -> str:
    parts = [f"{res.registers} registers/thread" if res.registers is not None else "registers unknown"]
    if res.shared_static:
        parts.append(f"{res.shared_static} B static shared memory/block")
    if res.stack_frame:
        parts.append(f"{res.stack_frame} B stack frame")
    return ", ".join(parts)


def _spill_note(sass: KernelSass, res: KernelResources | None) -> str | None:
    spilled = res is not None and res.spills
    if not (spilled or sass.local_loads or sass.local_stores):
        return None
    head = (f"spills {res.spill_stores} B stored / {res.spill_loads} B loaded to local memory" if spilled
            else "uses local memory (a stack array or an indexed local array, not a spill)")
    where = (f"{sass.local_stores} STL / {sass.local_loads} LDL in the code, {sass.local_stores_in_loops} STL / "
             f"{sass.local_loads_in_loops} LDL inside loops")
    advice = ("fewer live values (smaller per-thread tiles, fewer unrolled accumulators) or a higher register limit "
              "(__launch_bounds__ / -maxrregcount)" if spilled
              else "index local arrays with compile-time constants (full unrolling) so they stay in registers")
    return f"{head}: {where}; try {advice}"


def _tensor_note(sass: KernelSass) -> str | None:
    if sass.tensor_core:
        shown = ", ".join(f"{n} {op}" for op, n in sorted(sass.tensor_core.items()))
        return f"tensor-core instructions: {shown}"
    ffma = sass.fp32_math.get("FFMA", 0)
    if ffma + sass.fp32_math.get("FMUL", 0) < TENSOR_CORE_REMARK_MIN_FP32:
        return None
    return (f"no tensor-core instructions (no HMMA/HGMMA/IMMA): the math runs on the CUDA cores ({ffma} FFMA); "
            "a matrix multiply in fp16/bf16/tf32 should use mma/wgmma (WMMA, CUTLASS/CuTe) instead")


def _memory_note(sass: KernelSass) -> str | None:
    if not (sass.global_load_bits or sass.global_store_bits):
        return None
    parts = []
    if sass.global_load_bits:
        parts.append(f"global loads {_bits(sass.global_load_bits)}"
                     + (f" ({sass.async_copies} cp.async)" if sass.async_copies else ""))
    if sass.global_store_bits:
        parts.append(f"global stores {_bits(sass.global_store_bits)}")
    note = "; ".join(parts)
    narrow = [w for w in (*sass.global_load_bits, *sass.global_store_bits) if w < 64]
    if narrow and not any(w >= 64 for w in (*sass.global_load_bits, *sass.global_store_bits)):
        note += ("; every global access is 32-bit or narrower: 128-bit accesses (float4, int4, aligned "
                 "vector types) move the same bytes in a quarter of the instructions")
    return note


def _fp64_note(sass: KernelSass) -> str | None:
    if not (sass.fp64 or sass.fp64_conversions):
        return None
    shown = ", ".join(f"{n} {op}" for op, n in sorted(sass.fp64.items())) or "no FP64 math"
    return (f"FP64 instructions: {shown}, {sass.fp64_conversions} conversions to/from double; FP64 runs at half "
            "the FP32 rate (far less on consumer GPUs): if float was meant, use float literals (1.0f) and float "
            "functions (expf, sqrtf, fmaf)")


def _shared_note(sass: KernelSass) -> str | None:
    if not (sass.shared_loads or sass.shared_stores or sass.barriers):
        return None
    return (f"shared memory: {sass.shared_loads} loads, {sass.shared_stores} stores; {sass.barriers} barrier "
            f"instructions" + (f"; {sass.atomics} atomics" if sass.atomics else ""))


def _occupancy(res: KernelResources, gpu: GpuSpecs, block_size: int, dynamic_smem: int) -> Occupancy | None:
    if res.registers is None:
        return None
    shared = res.shared_static or 0
    if res.source == "cuobjdump" and shared >= RESERVED_SMEM_PER_BLOCK:
        shared -= RESERVED_SMEM_PER_BLOCK  # cuobjdump's figure already holds the per-block reservation
    try:
        return theoretical_occupancy(gpu, block_size, res.registers, shared + dynamic_smem)
    except ValueError:
        return None


def kernel_static(sass: KernelSass, res: KernelResources | None, gpu: GpuSpecs | None = None,
                  block_size: int | None = None, dynamic_smem_bytes: int = 0) -> KernelStatic:
    """One kernel's facts and notes."""
    notes = [_resource_note(res)] if res is not None else []
    occupancy = None
    if res is not None and gpu is not None and block_size:
        occupancy = _occupancy(res, gpu, block_size, dynamic_smem_bytes)
        if occupancy is not None:
            notes.append(f"theoretical occupancy on {gpu.name}: {occupancy.render()}")
    notes += [n for n in (_spill_note(sass, res), _tensor_note(sass), _fp64_note(sass), _memory_note(sass),
                          _shared_note(sass)) if n]
    return KernelStatic(sass=sass, resources=res, notes=notes, occupancy=occupancy.render() if occupancy else "",
                        occupancy_fraction=occupancy.fraction if occupancy else None)


def static_report(cubin: bytes | str | Path, ptxas_log: str = "", block_size: int | None = None,
                  gpu: GpuSpecs | None = None, dynamic_smem_bytes: int = 0, kernel: str | None = None,
                  cuobjdump: str | None = None) -> StaticReport:
    """Static facts for each kernel in ``cubin`` whose name matches the regular expression ``kernel``.

    ``ptxas_log`` is the compiler's ``-Xptxas -v`` output (the only source of spill sizes); registers and shared
    memory also come from ``cuobjdump --dump-resource-usage``. Occupancy needs ``block_size`` and ``gpu``.
    """
    mix = analyze_cubin(cubin, cuobjdump)
    tool = cuobjdump or find_tool("cuobjdump")
    dump = ptxas_resources.from_cubin(cubin, tool) if tool else {}
    merged = ptxas_resources.merge(ptxas_resources.from_ptxas(ptxas_log), dump)
    pattern = re.compile(kernel) if kernel else None
    chosen = [s for s in mix.values() if pattern is None or pattern.search(s.name) or pattern.search(s.mangled)]
    return StaticReport(
        kernels=[kernel_static(s, merged.get(s.mangled), gpu, block_size, dynamic_smem_bytes) for s in chosen],
        gpu=gpu.name if gpu else "", block_size=block_size)
