"""Theoretical occupancy from a kernel's static resources (ptxas) and a launch's block size, without a GPU.

Follows the CUDA occupancy calculator's rules for sm_70 and later: registers are allocated per warp in
units of 256, each block also reserves 1 KiB of shared memory for the system, and a block needs its whole
allocation on one SM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kernelpro.profiling.gpu_specs import GpuSpecs

REGISTER_UNIT = 256  # registers are allocated per warp in units of this many
RESERVED_SMEM_PER_BLOCK = 1024
MAX_REGISTERS_PER_THREAD = 255


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks and warps per SM for one kernel launch shape, and what limits them."""

    block_size: int
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str
    limits: dict[str, int]

    @property
    def fraction(self) -> float:
        return self.warps_per_sm / self.max_warps_per_sm

    def render(self) -> str:
        detail = ", ".join(f"{k} {v}" for k, v in self.limits.items())
        return (f"{self.block_size} threads/block: {self.blocks_per_sm} blocks, {self.warps_per_sm}/"
                f"{self.max_warps_per_sm} warps per SM ({self.fraction:.0%} occupancy), limited by "
                f"{self.limiter} (blocks allowed by each limit: {detail})")


def theoretical_occupancy(gpu: GpuSpecs, block_size: int, registers_per_thread: int,
                          shared_bytes_per_block: int = 0) -> Occupancy:
    """Occupancy of a launch with ``block_size`` threads on ``gpu``."""
    if not 1 <= block_size <= 1024:
        raise ValueError(f"block size must be 1..1024 threads, got {block_size}")
    if not 0 <= registers_per_thread <= MAX_REGISTERS_PER_THREAD:
        raise ValueError(f"registers per thread must be 0..{MAX_REGISTERS_PER_THREAD}, got {registers_per_thread}")
    if shared_bytes_per_block > gpu.smem_per_block_optin_bytes:
        raise ValueError(f"{shared_bytes_per_block} B of shared memory per block exceeds the "
                         f"{gpu.smem_per_block_optin_bytes} B a block may use on {gpu.name}")
    warps_per_block = math.ceil(block_size / 32)
    regs_per_warp = math.ceil(max(registers_per_thread, 1) * 32 / REGISTER_UNIT) * REGISTER_UNIT
    limits = {
        "warps": gpu.max_warps_per_sm // warps_per_block,
        "blocks": gpu.max_blocks_per_sm,
        "registers": gpu.registers_per_sm // (regs_per_warp * warps_per_block),
        "shared memory": gpu.smem_per_sm_bytes // (shared_bytes_per_block + RESERVED_SMEM_PER_BLOCK),
    }
    limiter = min(limits, key=lambda k: (limits[k], k != "warps"))
    blocks = limits[limiter]
    return Occupancy(block_size, blocks, blocks * warps_per_block, gpu.max_warps_per_sm, limiter, limits)
