"""The programs a worker may run: the toolchain that ``torch.compile``, Triton, nvcc and torch's extension builds
call, and nothing else (no terminal multiplexer's client, no downloader, no other program of the system).

Inductor on the CPU runs the C++ compiler (``g++``, which runs ``cc1plus``, ``as``, ``collect2`` and ``ld``),
``openssl sha512`` on a precompiled header, and this Python (it loads each CPU build it checks in a child Python
first, and its compile pool is this Python run again: such a child is inside every wall the worker is); Triton
runs ``ptxas`` and ``ldconfig -p``; nvcc runs ``cicc``, ``ptxas``, ``fatbinary``, ``nvlink``, ``cudafe++`` and
the host compiler. A ``load_inline`` or ``load`` call the judge did not build ahead is built in the worker by
torch, which runs ``ninja``, and ninja runs every build step through ``/bin/sh -c``: so the ``ninja`` torch would
find (on ``PATH``, and pip's ``ninja`` package's real binary behind its console script) and the shell
``/bin/sh`` names (dash, bash) are in the list too. A shell started so is inside every other wall: the
worker's own root, Landlock's limits on writes and on what it may run, the seccomp socket filter; and the
audit hook still names a candidate whose own Python code runs a program (``background_process``).

Each is found as the worker would find it (``PATH``, ``CUDA_HOME``, gcc's own directory, Triton's bundled
binaries) and named by its real path, with the dynamic loader each of them names. A script is allowed only when
the interpreter its ``#!`` line names is itself in the list (a console script of this Python), since the kernel
runs that interpreter too.
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
SHELL = "/bin/sh"  # the shell ninja runs each build step through (``/bin/sh -c``), whatever it links to
PT_INTERP = 3
# Programs every Linux machine has and no build runs: one of them shows that the kernel refuses the rest.
FOREIGN_PROGRAMS = ("/usr/bin/env", "/bin/ls", "/usr/bin/ls", "/bin/cat", "/usr/bin/cat")


def _elf_interpreter(path: str) -> str | None:
    """The dynamic loader an ELF executable names (PT_INTERP), or None (not ELF, static, unreadable)."""
    try:
        with open(path, "rb") as file:
            head = file.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit only, as kernelpro's machines
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


def _script_interpreter(path: str) -> str | None:
    """The real path of the program a ``#!`` line names, "" for a script whose line names none, None for a file
    that is no script."""
    with contextlib.suppress(OSError), open(path, "rb") as file:
        line = file.readline(4096)
        if not line.startswith(b"#!"):
            return None
        words = line[2:].split()
        return os.path.realpath(os.fsdecode(words[0])) if words else ""
    return None


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


def _ninja_programs(search: str) -> list[str]:
    """The ``ninja`` torch runs (the first on ``PATH``), and the real binary of pip's ``ninja`` package in its data
    directory, which older releases' ``bin/ninja`` console script runs; found without importing the package."""
    found = [ninja] if (ninja := shutil.which("ninja", path=search)) else []
    with contextlib.suppress(ImportError, ValueError):
        spec = importlib.util.find_spec("ninja")
        if spec is not None and spec.submodule_search_locations:
            found += [str(Path(location) / "data" / "bin" / "ninja") for location in spec.submodule_search_locations]
    return found


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
    files += [*_ninja_programs(search), SHELL, sys.executable]
    real = [path for path in dict.fromkeys(os.path.realpath(path) for path in files) if os.path.isfile(path)]
    interpreters = {path: _script_interpreter(path) for path in real}
    programs = {path for path, interpreter in interpreters.items() if interpreter is None}
    real = [path for path in real if interpreters[path] is None or interpreters[path] in programs]
    loaders = [interpreter for path in real if (interpreter := _elf_interpreter(path))]
    for directory in directories:
        with contextlib.suppress(OSError):
            loaders += [i for entry in os.scandir(directory) if entry.is_file() and (i := _elf_interpreter(entry.path))]
    loaders = [os.path.realpath(path) for path in loaders if os.path.isfile(path)]
    return list(dict.fromkeys([*real, *loaders, *(os.path.realpath(d) for d in directories)]))


def foreign_program(executables: list[str]) -> str | None:
    """The real path of a program this machine has that ``executables`` (``toolchain_executables``) neither
    names nor holds in one of its directories, or None (each of ``FOREIGN_PROGRAMS`` absent or part of the
    toolchain, as where one multi-call binary is both the shell and ``ls``)."""
    for name in FOREIGN_PROGRAMS:
        path = os.path.realpath(name)
        if os.path.isfile(path) and not any(path == allowed or path.startswith(allowed.rstrip("/") + "/")
                                            for allowed in executables):
            return path
    return None
