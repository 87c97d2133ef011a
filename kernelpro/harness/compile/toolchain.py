"""The CUDA compilers on this machine: where they are, which versions, and the default target.

Tools are looked for on PATH, then in ``$CUDA_HOME/bin``, ``/usr/local/cuda/bin`` and the NVIDIA wheels'
``bin`` folders (``nvidia-cuda-nvcc``, ``nvidia-cuda-cuobjdump`` install there, not on PATH); ``ncu`` first in the
standalone Nsight Compute installs, newest first. ``kernelpro doctor`` reports what this search finds, so it never
names a tool the compiler or the profiler would not use.
"""

from __future__ import annotations

import functools
import glob
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

from kernelpro.config import CompileSettings

DEFAULT_ARCH = "sm_90a"
# Compute capabilities with an arch-specific ("a") target: wgmma, setmaxnreg, tcgen05 and the like.
ARCH_SPECIFIC = {(9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1)}
WHEEL_SUBDIRS = ("cu13", "cu12", "cuda_nvcc", "cuda_cuobjdump", "cuda_runtime")
NSIGHT_COMPUTE_INSTALLS = "/opt/nvidia/nsight-compute/*"


def _wheel_roots() -> list[Path]:
    """Folders of the ``nvidia`` namespace package (where the CUDA wheels unpack)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def _toolkit_roots() -> list[Path]:
    roots = [Path(os.environ["CUDA_HOME"])] if os.environ.get("CUDA_HOME") else []
    roots.append(Path("/usr/local/cuda"))
    roots += [root / sub for root in _wheel_roots() for sub in WHEEL_SUBDIRS]
    return roots


def _version_key(path: str) -> list[int]:
    return [int(part) for part in re.findall(r"\d+", Path(path).name)]


def search_dirs(name: str) -> list[Path]:
    """Where ``name`` is looked for after PATH, in order (whether or not each exists)."""
    dirs = [root / "bin" for root in _toolkit_roots()]
    if name == "ncu":  # 2025.3.1 before 2024.10.0: compared as numbers, not as text
        dirs = [Path(p) for p in sorted(glob.glob(NSIGHT_COMPUTE_INSTALLS), key=_version_key, reverse=True)] + dirs
    return list(dict.fromkeys(dirs))


def find_tool(name: str) -> str | None:
    """Path of a CUDA tool (``nvcc``, ``ptxas``, ``cuobjdump``, ``ncu``) or an explicit executable path, or None."""
    if os.sep in name:
        return name if os.access(name, os.X_OK) else None
    dirs = [str(path) for path in search_dirs(name) if path.is_dir()]
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(dirs))


def tool_version(path: str | None) -> str | None:
    """``13.0.88`` from ``nvcc --version`` (the same line in ptxas's and cuobjdump's)."""
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\bV(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def nvrtc_version() -> tuple[int, int] | None:
    """NVRTC's (major, minor), or None when the library or its binding is missing."""
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # the binding raises its own loader errors when libnvrtc is absent
        return None
    return (major, minor) if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else None


def _distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def cuda_include_dirs() -> list[str]:
    """The CUDA headers NVRTC needs for ``cuda_fp16.h`` and friends: one toolkit's, plus its CCCL folder."""
    for root in _toolkit_roots():
        for include in (root / "include", root / "targets" / "x86_64-linux" / "include"):
            if (include / "cuda_fp16.h").is_file():
                cccl = include / "cccl"
                return [str(include)] + ([str(cccl)] if cccl.is_dir() else [])
    return []


def cutlass_include_dir() -> str | None:
    """``source/include`` of the ``nvidia-cutlass`` wheel (CUTLASS and CuTe headers), when installed."""
    try:
        spec = importlib.util.find_spec("cutlass_library")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        include = Path(location) / "source" / "include"
        if (include / "cute").is_dir():
            return str(include)
    return None


def default_arch(arch_specific: bool = True) -> str:
    """The visible GPU's target (``sm_90a`` on an H100/H200 when ``arch_specific``), else ``sm_90a``."""
    import torch

    if not torch.cuda.is_available():
        return DEFAULT_ARCH
    major, minor = torch.cuda.get_device_capability()
    suffix = "a" if arch_specific and (major, minor) in ARCH_SPECIFIC else ""
    return f"sm_{major}{minor}{suffix}"


def resolve_arch(requested: str | None, settings: CompileSettings) -> str:
    """The request's target, else the configured one, else the visible GPU's."""
    return requested or settings.arch or default_arch()


class Toolchain:
    """What this machine compiles CUDA with; each piece is looked up on first use and None when missing.

    Lazy, so that a process that only uses NVRTC never starts ``nvcc --version`` and friends.
    """

    def __init__(self, nvcc_name: str = "nvcc") -> None:
        self.nvcc_name = nvcc_name

    @functools.cached_property
    def nvcc(self) -> str | None:
        return find_tool(self.nvcc_name)

    @functools.cached_property
    def ptxas(self) -> str | None:
        return find_tool("ptxas")

    @functools.cached_property
    def cuobjdump(self) -> str | None:
        return find_tool("cuobjdump")

    @functools.cached_property
    def nvcc_version(self) -> str | None:
        return tool_version(self.nvcc)

    @functools.cached_property
    def ptxas_version(self) -> str | None:
        return tool_version(self.ptxas)

    @functools.cached_property
    def nvrtc_version(self) -> tuple[int, int] | None:
        return nvrtc_version()

    @functools.cached_property
    def nvrtc_build(self) -> str | None:
        """The ``nvidia-cuda-nvrtc`` wheel's version, finer than NVRTC's own (major, minor)."""
        return _distribution_version("nvidia-cuda-nvrtc")

    @functools.cached_property
    def cuda_include_dirs(self) -> tuple[str, ...]:
        return tuple(cuda_include_dirs())

    @functools.cached_property
    def cutlass_include(self) -> str | None:
        return cutlass_include_dir()

    @functools.cached_property
    def cutlass_version(self) -> str | None:
        return _distribution_version("nvidia-cutlass")

    def tag(self, backend: str) -> str:
        """The compiler's identity, part of every cache key and result."""
        if backend == "nvrtc":
            if self.nvrtc_version is None:
                return "nvrtc missing"
            return f"nvrtc {self.nvrtc_version[0]}.{self.nvrtc_version[1]}" + (
                f" ({self.nvrtc_build})" if self.nvrtc_build else "")
        return f"nvcc {self.nvcc_version}" if self.nvcc else "nvcc missing"


@functools.lru_cache(maxsize=8)
def _detect(nvcc_name: str, cuda_home: str | None) -> Toolchain:
    return Toolchain(nvcc_name)


def detect(settings: CompileSettings | None = None) -> Toolchain:
    """This machine's toolchain (one per process, executable name and ``CUDA_HOME``)."""
    settings = settings or CompileSettings()
    return _detect(settings.nvcc, os.environ.get("CUDA_HOME"))
