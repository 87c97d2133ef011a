"""A worker's own directories: where they are made, the private caches inside them, and the caller's caches that
stay the caller's.

Compilers keep caches that later programs load without question: Inductor's generated modules and C++ builds,
Triton's kernels, the CUDA driver's JIT cache, CuPy's kernels. Shared with the caller (under HOME or
``/tmp/torchinductor_$USER``), one candidate could leave a kernel there that another candidate, a baseline or
the user's own programs would load. So every worker points each of them (and its temporary directory) into its
own directory, whatever the caller's environment said, and the caller's own caches are read-only inside it
(``jobs.protected_paths``).

Every worker's directory is made in one directory per user (``worker_root``), which each worker sees read-only
but for its own: no candidate can plant in the caches of a worker judging beside it.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import os
import re
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
# The caller's directories behind these names: what it set them to stays its own, read-only in workers (for
# TRITON_HOME, the ``.triton`` inside it). TORCH_HOME holds hub code and weights its programs load.
CALLER_DIRS = [name for name in PRIVATE_DIRS if name != "TMPDIR"] + ["TORCH_HOME"]


def private_environment(workdir: str | os.PathLike[str]) -> dict[str, str]:
    """The variables that point a worker's caches and temporary directory into ``workdir``, each directory made
    (an absent TMPDIR would send ``tempfile`` back to the shared ``/tmp``)."""
    env = {}
    for name, sub in PRIVATE_DIRS.items():
        path = Path(workdir) / sub
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    return env


def caller_caches(environ: dict[str, str] | None = None) -> list[Path]:
    """The caller's own caches: what its environment names (those it leaves at their defaults under HOME are
    protected with HOME), and Inductor's default under the temporary directory."""
    environ = os.environ if environ is None else environ
    paths = []
    for name in CALLER_DIRS:
        if value := environ.get(name):
            path = Path(value).expanduser()
            paths.append(path / ".triton" if name == "TRITON_HOME" else path)
    return [*paths, inductor_default_cache()]


def inductor_default_cache() -> Path:
    """Where Inductor caches without TORCHINDUCTOR_CACHE_DIR (``torch._inductor.runtime.cache_dir_utils``'s
    ``default_cache_dir``, without importing torch)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}"
    return Path(tempfile.gettempdir()) / ("torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


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
