"""The programs a worker may run: the toolchain that ``torch.compile``, Triton and nvcc call, and nothing else
(no shell, no terminal multiplexer's client, no downloader).

Inductor on the CPU runs the C++ compiler (``g++``, which runs ``cc1plus``, ``as``, ``collect2`` and ``ld``),
``openssl sha512`` on a precompiled header, and this Python (it loads each CPU build it checks in a child Python
first, and its compile pool is this Python run again: such a child is inside every wall the worker is); Triton
runs ``ptxas`` and ``ldconfig -p``; nvcc runs ``cicc``, ``ptxas``, ``fatbinary``, ``nvlink``, ``cudafe++`` and
the host compiler. Each is found as the worker would find it (``PATH``, ``CUDA_HOME``, gcc's
own directory, Triton's bundled binaries) and named by its real path, with the dynamic loader each of them
names. A script is left out: its interpreter would have to be allowed with it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

COMPILERS = ("c++", "g++", "gcc", "cc", "clang", "clang++")
COMPILER_VARIABLES = ("CXX", "CC", "CUDAHOSTCXX")
# Programs gcc runs from its own directory (that directory holds only gcc's internals).
GCC_INTERNALS = ("cc1plus", "cc1", "collect2", "lto-wrapper")
# openssl: Inductor hashes a precompiled header's preprocessed text with ``openssl sha512``.
BINUTILS = ("as", "ld", "ld.bfd", "ld.gold", "objcopy", "ar", "ldconfig", "openssl")
CUDA_PROGRAMS = ("nvcc", "ptxas", "fatbinary", "nvlink", "cudafe++", "bin2c", "nvdisasm", "cuobjdump")
SYSTEM_SBIN = "/usr/sbin:/sbin"  # ldconfig, which Triton runs to find libcuda
PT_INTERP = 3


def _elf_interpreter(path: str) -> str | None:
    """The dynamic loader an ELF executable names (PT_INTERP), or None (not ELF, static, unreadable)."""
    try:
        with open(path, "rb") as file:
            head = file.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit only, as the machines kernelpro runs on
                return None
            endian = "<" if head[5] == 1 else ">"
            phoff, = struct.unpack_from(endian + "Q", head, 32)
            phentsize, phnum = struct.unpack_from(endian + "HH", head, 54)
            for index in range(phnum):
                file.seek(phoff + index * phentsize)
                kind, = struct.unpack(endian + "I", file.read(4))
                if kind == PT_INTERP:
                    file.seek(phoff + index * phentsize + 8)
                    offset, = struct.unpack(endian + "Q", file.read(8))
                    file.seek(phoff + index * phentsize + 32)
                    size, = struct.unpack(endian + "Q", file.read(8))
                    file.seek(offset)
                    return file.read(size).rstrip(b"\x00").decode()
    except (OSError, struct.error, UnicodeDecodeError):
        return None
    return None


def _is_script(path: str) -> bool:
    with contextlib.suppress(OSError), open(path, "rb") as file:
        return file.read(2) == b"#!"
    return False


def _gcc_directory(compiler: str) -> str | None:
    """The directory gcc runs cc1plus and collect2 from (clang answers with a bare name: None)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        found = subprocess.run([compiler, "-print-prog-name=cc1plus"], capture_output=True, text=True, timeout=10,
                               check=False).stdout.strip()
        if os.path.isabs(found) and os.path.isfile(found):
            return os.path.dirname(os.path.realpath(found))
    return None


def _cuda_directories(environ: dict[str, str]) -> list[Path]:
    homes = [environ.get("CUDA_HOME"), environ.get("CUDA_PATH"), "/usr/local/cuda"]
    if nvcc := shutil.which("nvcc", path=environ.get("PATH")):
        homes.append(str(Path(nvcc).resolve().parent.parent))
    found = []
    for home in filter(None, homes):
        found += [Path(home) / "bin", Path(home) / "nvvm" / "bin"]
    return found


def _triton_binaries() -> list[Path]:
    """Triton's bundled ptxas, cuobjdump and nvdisasm, found without importing Triton."""
    with contextlib.suppress(ImportError, ValueError):
        spec = importlib.util.find_spec("triton")
        if spec is not None and spec.submodule_search_locations:
            return [Path(location) / "backends" / "nvidia" / "bin" for location in spec.submodule_search_locations]
    return []


def toolchain_executables(environ: dict[str, str] | None = None) -> list[str]:
    """The real paths a worker may run (files, and gcc's and Triton's directories of internals), with the
    dynamic loaders they name."""
    environ = dict(os.environ if environ is None else environ)
    search = os.pathsep.join(filter(None, [environ.get("PATH"), SYSTEM_SBIN]))
    files: list[str] = []
    directories: list[str] = []
    named = [environ[name].split()[0] for name in COMPILER_VARIABLES if environ.get(name, "").strip()]
    for name in (*named, *COMPILERS):
        if found := shutil.which(name, path=search):
            files.append(found)
            if (internals := _gcc_directory(found)) is not None:
                directories.append(internals)
    files += [found for name in BINUTILS if (found := shutil.which(name, path=search))]
    for directory in _cuda_directories(environ):
        files += [str(directory / name) for name in CUDA_PROGRAMS if (directory / name).is_file()]
        if directory.name == "bin" and directory.parent.name == "nvvm" and directory.is_dir():
            directories.append(str(directory))
    directories += [str(path) for path in _triton_binaries() if path.is_dir()]
    files.append(sys.executable)
    real = [os.path.realpath(path) for path in files]
    real = [path for path in dict.fromkeys(real) if os.path.isfile(path) and not _is_script(path)]
    loaders = [interpreter for path in real if (interpreter := _elf_interpreter(path))]
    for directory in directories:
        with contextlib.suppress(OSError):
            loaders += [i for entry in os.scandir(directory) if entry.is_file() and (i := _elf_interpreter(entry.path))]
    loaders = [os.path.realpath(path) for path in loaders if os.path.isfile(path)]
    return list(dict.fromkeys([*real, *loaders, *(os.path.realpath(d) for d in directories)]))
