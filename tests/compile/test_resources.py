"""Resource usage from ptxas's report and from cuobjdump, on kernels built to spill and to use shared memory."""

from __future__ import annotations

import pytest

from kernelpro.harness.compile import resources
from kernelpro.harness.compile.dispatch import compile_source
from kernelpro.harness.compile.result import CompileRequest
from tests.compile import kernels
from tests.compile.conftest import TOOLS, needs_cuobjdump, needs_nvcc, needs_nvrtc

BACKENDS = [pytest.param("nvrtc", marks=needs_nvrtc), pytest.param("nvcc", marks=needs_nvcc)]


def built(source: str, settings, backend: str):
    result = compile_source(CompileRequest(source=source, backend=backend), settings)
    assert result.ok, result.message
    return result


@pytest.mark.parametrize("backend", BACKENDS)
def test_spilling_kernel_reports_spills_and_stack(backend, compile_settings):
    usage = built(kernels.SPILL, compile_settings, backend).resources["spill"]
    assert usage.registers is not None and usage.registers <= 32  # __launch_bounds__(1024, 2)
    assert usage.spill_stores > 0 and usage.spill_loads > 0 and usage.spills
    assert usage.stack_frame >= 64 * 4  # the runtime-indexed array lives on the stack
    assert "spills" in usage.summary() and "B stack" in usage.summary()


@pytest.mark.parametrize("backend", BACKENDS)
def test_static_shared_memory_is_exact(backend, compile_settings):
    usage = built(kernels.SHARED, compile_settings, backend).resources["transpose_tile"]
    assert usage.shared_static == kernels.SHARED_BYTES
    assert usage.spill_stores == 0 and usage.stack_frame == 0 and not usage.spills
    assert usage.barriers == 1


@needs_nvrtc
@needs_cuobjdump
def test_cuobjdump_reports_on_an_nvrtc_cubin(compile_settings):
    source = kernels.SPILL + kernels.SHARED
    result = built(source, compile_settings, "nvrtc")
    dumped = resources.from_cubin(result.binary, TOOLS.cuobjdump)
    assert set(dumped) == {"spill", "transpose_tile"}
    spill, tile = dumped["spill"], dumped["transpose_tile"]
    assert spill.source == "cuobjdump"
    assert spill.registers == result.resources["spill"].registers
    assert spill.stack_frame == result.resources["spill"].stack_frame
    # cuobjdump counts the 1 KB the driver reserves per block on sm_80+ once a kernel uses shared memory.
    assert kernels.SHARED_BYTES <= tile.shared_static <= kernels.SHARED_BYTES + 1024
    assert tile.constant and tile.constant > 0
    merged = resources.merge(result.resources, dumped)
    assert merged["spill"].source == "both" and merged["spill"].spill_stores > 0 and merged["spill"].constant


@needs_cuobjdump
def test_cuobjdump_on_something_that_is_not_a_cubin_gives_nothing():
    assert resources.from_cubin(b"not an ELF file", TOOLS.cuobjdump) == {}


@needs_nvrtc
def test_nvrtc_log_holds_the_ptxas_report(compile_settings):
    result = built(kernels.ADD, compile_settings, "nvrtc")
    assert "Compiling entry function 'add_kernel'" in result.log
    assert resources.from_ptxas(result.log)["add_kernel"].registers == result.resources["add_kernel"].registers
