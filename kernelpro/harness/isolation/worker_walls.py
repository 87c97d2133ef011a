"""The walls of a worker that runs candidates, beyond the namespaces every isolated process gets.

In order, before any thread or candidate code (``isolation.isolate_worker(confine=True)``):

1. a root of its own (``isolation.root``): the system's directories, the Python installation, kernelpro's
   package and the judge's directories read-only; its working directory writable; a private ``/tmp``, ``/run``
   and ``/dev/shm``; HOME, the caller's directory and everything else absent. Where the root cannot be built,
   the judge's directories are made read-only in place (``isolation.mounts``), as before;
2. no capabilities left to undo the mounts with;
3. Landlock (not for CUDA workers, whose driver fails inside it): writes only in its own directory and the
   private ``/dev/shm``, and only the toolchain to run: the compilers, ninja and its shell, Python
   (``isolation.toolchain``);
4. a seccomp filter: no Unix socket, filesystem or abstract, and no other socket a network namespace does not
   cover (``isolation.seccomp``).
"""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kernelpro.harness.isolation.landlock import enter_landlock
from kernelpro.harness.isolation.root import RootError, enter_private_root
from kernelpro.harness.isolation.seccomp import refuse_foreign_sockets
from kernelpro.harness.isolation.toolchain import toolchain_executables

if TYPE_CHECKING:
    from kernelpro.harness.isolation.walls import Protections

PACKAGE_ROOT = Path(__file__).resolve().parents[3]
NO_UNIX_SOCKETS = "no unix sockets"
OWN_ROOT = "a root of its own (HOME and the caller's directory absent; private /tmp, /run, /dev/shm)"
# Search paths whose directories a compile reads (headers, libraries) or the worker loads from.
PATH_VARIABLES = ("LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV",
                  "CONDA_PREFIX")


def _inside(path: str, other: str) -> bool:
    return path == other or path.startswith(other.rstrip("/") + "/")


def readable_paths(protected: list[str], executables: list[str], home: str | None) -> list[str]:
    """What a worker reads at the paths it knows them by: the Python installation, kernelpro's package (not the
    directory that holds it, which may be the caller's own, with its ``.env``), the compilers' directories, the
    search paths its environment names and the judge's directories; never HOME itself or a directory holding
    it."""
    package = str(PACKAGE_ROOT)
    wanted = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix, *site.getsitepackages(),
              site.getusersitepackages(), *(p for p in sys.path if os.path.isabs(p)), *protected,
              *(os.path.dirname(p) for p in executables)]
    for name in PATH_VARIABLES:
        wanted += [p for p in os.environ.get(name, "").split(os.pathsep) if os.path.isabs(p)]
    readable = []
    for raw in wanted:
        path = os.path.realpath(raw)
        if path == package:
            path = str(PACKAGE_ROOT / "kernelpro")
        if home and _inside(os.path.realpath(home), path):
            continue  # HOME, or a directory holding it
        readable.append(path)
    return list(dict.fromkeys(readable))


def confine_worker(protections: Protections, protected: list[str], landlock: bool,
                   sockets_later: bool = False) -> None:
    """Apply the walls of the module's docstring to this process, recording each in ``protections``.
    ``sockets_later``: a CUDA worker, whose socket filter waits until CUDA has started (``refuse_sockets_now``)."""
    from kernelpro.harness.isolation.walls import LANDLOCK_BREAKS_CUDA, _protect, drop_capabilities

    own = os.path.realpath(os.getcwd())
    executables = toolchain_executables()
    private = False
    if "user namespace" in protections.applied or os.geteuid() == 0:
        try:
            enter_private_root(own, readable_paths(protected, executables, os.environ.get("HOME")))
        except (RootError, OSError) as exc:
            protections.missing["own root"] = str(exc)
        else:
            private = True
            protections.applied += [OWN_ROOT, "read-only judge files"]
            drop_capabilities(protections)
    else:
        protections.missing["own root"] = "no user namespace: no mount namespace of its own"
    if not private:
        _protect(protected, protections)
    if landlock:
        writable = [own, "/dev/shm"] if private else [own]  # the private /dev/shm: multiprocessing's semaphores
        enter_landlock(protections.applied, protections.missing, writable=writable, executable=executables)
    else:
        protections.missing["landlock"] = LANDLOCK_BREAKS_CUDA
    if sockets_later:
        protections.pending.append(NO_UNIX_SOCKETS)
    else:
        refuse_sockets_now(protections.applied, protections.missing)


def refuse_sockets_now(applied: list[str], missing: dict[str, str]) -> None:
    """Install the socket filter (``isolation.seccomp``) on this process and record whether it took. A CUDA worker
    calls it once the driver has started, before any candidate code runs: the driver's start-up asks for a Unix
    socket, and refused one it fails with error 304."""
    if why := refuse_foreign_sockets():
        missing[NO_UNIX_SOCKETS] = why
    else:
        applied.append(NO_UNIX_SOCKETS)
