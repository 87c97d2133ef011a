"""Settings for compile tests (a private cache, the H100/H200 target) and skips for missing compilers."""

from __future__ import annotations

import pytest

from kernelpro.config import CompileSettings
from kernelpro.harness.compile.toolchain import detect

TOOLS = detect()

needs_nvrtc = pytest.mark.skipif(TOOLS.nvrtc_version is None,
                                 reason="NVRTC missing (pip install cuda-bindings nvidia-cuda-nvrtc)")
needs_nvcc = pytest.mark.skipif(TOOLS.nvcc is None, reason="nvcc not found (CUDA toolkit or nvidia-cuda-nvcc)")
needs_cuobjdump = pytest.mark.skipif(TOOLS.cuobjdump is None,
                                     reason="cuobjdump not found (CUDA toolkit or nvidia-cuda-cuobjdump)")
needs_cutlass = pytest.mark.skipif(TOOLS.cutlass_include is None, reason="nvidia-cutlass wheel not installed")


@pytest.fixture
def compile_settings(tmp_path) -> CompileSettings:
    """sm_90a whatever the machine, and a cache of the test's own."""
    return CompileSettings(arch="sm_90a", cache_dir=tmp_path / "cache", workers=2, timeout_s=120)
