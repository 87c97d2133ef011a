from __future__ import annotations

import pytest

from kernelpro.profiling.gpu_specs import lookup
from kernelpro.profiling.occupancy import theoretical_occupancy

H200 = lookup("NVIDIA H200")


def test_light_kernel_reaches_full_occupancy():
    occ = theoretical_occupancy(H200, 256, 32)
    assert occ.blocks_per_sm == 8 and occ.warps_per_sm == 64 and occ.fraction == 1.0 and occ.limiter == "warps"


def test_register_hungry_kernel_is_register_limited():
    occ = theoretical_occupancy(H200, 256, 128)  # 128 x 32 = 4096 registers per warp, 8 warps per block
    assert occ.limiter == "registers" and occ.blocks_per_sm == 2 and occ.fraction == 0.25


def test_registers_round_up_to_the_allocation_unit():
    # 33 registers -> 1056 per warp -> 1280 after rounding: 65536 / (1280 x 8) = 6 blocks
    assert theoretical_occupancy(H200, 256, 33).limits["registers"] == 6


def test_shared_memory_limits_with_the_reserved_kilobyte():
    occ = theoretical_occupancy(H200, 128, 32, shared_bytes_per_block=100 * 1024)
    assert occ.limiter == "shared memory" and occ.blocks_per_sm == 2
    assert "shared memory" in occ.render() and "occupancy" in occ.render()


def test_bad_launch_shapes_are_refused():
    with pytest.raises(ValueError, match="block size"):
        theoretical_occupancy(H200, 2048, 32)
    with pytest.raises(ValueError, match="exceeds"):
        theoretical_occupancy(H200, 128, 32, shared_bytes_per_block=300 * 1024)
