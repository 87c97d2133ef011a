"""A worker's own directories: where they are made, and the private caches inside them.

Compilers keep caches that later programs load without question: Inductor's generated modules and C++ builds,
Triton's kernels, the CUDA driver's JIT cache, CuPy's kernels. Shared with the caller (under HOME or
``/tmp/torchinductor_$USER``), one candidate could leave a kernel there that another candidate, a baseline or
the user's own programs would load. So every worker points each of them (and its temporary directory) into its
own directory, whatever the caller's environment said.

Every worker's directory is made in one directory per user (``worker_root``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import tempfile
from pathlib import Path

# Each variable a worker's tools write under, and where it points inside the worker's directory. TRITON_HOME is
# where Triton keeps ``.triton`` (its dump and override directories beside the cache).
PRIVATE_DIRS = {
    "TMPDIR": "tmp",
    "TORCHINDUCTOR_CACHE_DIR": "caches/torchinductor",
    "TRITON_CACHE_DIR": "caches/triton/cache",
    "TRITON_HOME": "caches/triton",
    "CUDA_CACHE_PATH": "caches/nv-compute-cache",
    "CUPY_CACHE_DIR": "caches/cupy",
    "CUTE_DSL_CACHE_DIR": "caches/cute-dsl",
    "PYTORCH_KERNEL_CACHE_PATH": "caches/torch-kernels",
    "XDG_CACHE_HOME": "caches/xdg",
    "MPLCONFIGDIR": "caches/matplotlib",
}


def private_environment(workdir: str | os.PathLike[str]) -> dict[str, str]:
    """The variables that point a worker's caches and temporary directory into ``workdir``, each directory made
    (an absent TMPDIR would send ``tempfile`` back to the shared ``/tmp``)."""
    env = {}
    for name, sub in PRIVATE_DIRS.items():
        path = Path(workdir) / sub
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    return env


@functools.cache
def worker_root() -> Path:
    """The directory every worker's own directory is made in: this user's, under the temporary directory. Should
    another user hold that name, this process makes one of its own."""
    root = Path(tempfile.gettempdir()) / f"kernelpro-workers-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return Path(tempfile.mkdtemp(prefix="kernelpro-workers-"))
    return root


def make_worker_dir(prefix: str, parent: str | os.PathLike[str] | None = None) -> str:
    """A new, empty directory for a worker (or one of its jobs), under ``parent`` or ``worker_root``."""
    return tempfile.mkdtemp(prefix=prefix, dir=parent or worker_root())
