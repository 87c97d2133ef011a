"""Compiling candidates' CUDA C++ and the CUTLASS/CuTe sources the coder browses."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from kernelpro.config.paths import COMPILE_SUBDIR, INLINE_SUBDIR, KERNELPRO_HOME, USER_CACHE_DIR


class CompileSettings(BaseModel):
    """Compiling candidates' CUDA C++ (NVRTC, nvcc) and caching what was built."""

    cache_dir: Path = USER_CACHE_DIR / COMPILE_SUBDIR
    """Content-addressed cache of compiled binaries, shared across runs; unset, ``compile/`` under
    ``cache.root``."""
    arch: str | None = None
    """Target such as ``sm_90a``; unset means the visible GPU's, or ``sm_90a`` without one."""
    nvcc: str = "nvcc"
    """The nvcc executable (for kernels that need CUTLASS/CuTe headers or nvcc-only features)."""
    include_dirs: list[Path] = Field(default_factory=list)
    """Extra include directories for nvcc and NVRTC (CUTLASS's are added automatically)."""
    workers: int = 0
    """Processes in the compile pool; 0 means one per CPU core."""
    timeout_s: float = 180.0
    """Wall-time limit for one compilation."""
    inline_ahead: bool = True
    """Build candidates' ``torch.utils.cpp_extension.load_inline``/``load`` extensions in the CPU pool while the
    GPU judges others, where their arguments can be read from the source; off, every extension is built in the
    worker when the candidate is imported (the serial path)."""
    inline_cache: bool = True
    """Keep built extensions in ``inline_cache_dir`` and load them from there, in the pool and in workers alike;
    off, every extension is built again (in a throw-away directory)."""
    inline_cache_dir: Path = USER_CACHE_DIR / INLINE_SUBDIR
    """Built ``load_inline`` extensions keyed on their sources, flags, torch, CUDA, compiler and target; shared by
    every run and process (entries are published by an atomic rename, builds of one key serialised by a lock);
    unset, ``load-inline/`` under ``cache.root``."""
    inline_lean_headers: bool = True
    """Compile a load_inline candidate's CUDA source with ``<torch/types.h>`` where it includes
    ``<torch/extension.h>`` and uses nothing that only the latter declares (pybind11, Python, torch::nn/optim/
    autograd/jit/data): about 3x less nvcc time; a source that does not build so is built as written."""
    inline_workers: int = 0
    """Extension builds at once in the pool (each runs ninja over its two translation units); 0 means one per
    CPU core."""
    inline_timeout_s: float = 900.0
    """Wall-time limit for one extension build in the pool (a cold build against torch's headers takes about a
    minute)."""


class CutlassSettings(BaseModel):
    """The CUTLASS/CuTe source the coder browses."""

    root: Path | None = None
    """A CUTLASS checkout (with include/ and examples/); unset means the copy in the nvidia-cutlass wheel."""
    include_dsl: bool = True
    """Also index the CuTe DSL's Python sources when nvidia-cutlass-dsl is installed."""
    index_dir: Path = KERNELPRO_HOME / "cutlass-index"
    """Where the symbol table and text index are cached, one per source tree."""
    max_results: int = 20
    """Most hits one search returns, so a reply fits in an LLM's context."""
