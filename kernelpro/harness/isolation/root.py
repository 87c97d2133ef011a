"""A worker's own file system root: the system's directories and what it must read, read-only; its own
directory writable; a private ``/tmp``, ``/run`` and ``/dev/shm``; nothing else.

In its own user and mount namespaces a worker builds a new root on an empty tmpfs and moves into it
(``pivot_root``, then the old root detached, as bubblewrap does). Bound into it, read-only, at their own
paths: the system's directories (``/usr``, ``/etc``, ``/opt``, ``/var``, the ``/lib`` and ``/bin`` links,
``/sys``, ``/dev`` and ``/proc``) and the directories it must read (``readable``: the Python installation,
kernelpro's package, the judge's caches); writable: its own directory. Everything else does not exist there:
HOME, the directory the caller was started in (its ``kernelpro.toml``, its ``.env``), other workers'
directories, every Unix socket under ``/tmp`` and ``/run`` (a terminal multiplexer's, a desktop bus, an SSH
agent). ``/proc/self/mountinfo`` lists only what was bound. The root itself is read-only too, so nothing can
be made beside what is there. This is the write wall of a CUDA worker, where Landlock cannot be used.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from kernelpro.harness.isolation.mounts import MS_BIND, MS_NODEV, MS_NOSUID, MS_REC, remount_read_only

MS_RDONLY, MS_REMOUNT, MS_PRIVATE = 1, 32, 1 << 18
MNT_DETACH = 2
SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 1  # 442 on x86_64 and arm64
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
# Top-level directories of the system, bound whole; anything else at the top (home, root, tmp, run, mnt, media,
# srv, a project's own directory) is left out.
SYSTEM_DIRS = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "var", "sys", "dev", "proc",
               "nix", "snap"}
PRIVATE_TMPFS = {"tmp": "mode=1777,size=256m", "run": "mode=0755,size=16m", "dev/shm": "mode=1777,size=256m"}
BASE = "/tmp"  # where the scaffolding tmpfs goes while the root is built (then detached with the old root)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _error() -> str:
    return os.strerror(ctypes.get_errno())


class RootError(OSError):
    """A step of building the root failed; the message says which."""


def _check(result: int, what: str) -> None:
    if result != 0:
        raise RootError(f"{what} failed: {_error()}")


def _pivot_root(new: str, old: str) -> None:
    import platform

    number = SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise RootError(f"no pivot_root number for {platform.machine()}")
    _check(_libc().syscall(number, new.encode(), old.encode()), f"pivot_root({new}, {old})")


def _tmpfs(target: str, options: str) -> None:
    _check(_libc().mount(b"tmpfs", target.encode(), b"tmpfs", ctypes.c_ulong(MS_NOSUID | MS_NODEV),
                         options.encode()), f"mounting a tmpfs on {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def _bind(source: str, target: str, read_only: bool) -> None:
    """``source`` at ``target`` with the mounts beneath it; read-only, those beneath too (``/sys``'s cgroup files
    included) where the kernel has ``mount_setattr`` (5.12), else the top one."""
    libc = _libc()
    _check(libc.mount(source.encode(), target.encode(), None, ctypes.c_ulong(MS_BIND | MS_REC), None),
           f"binding {source}")
    if not read_only:
        return
    attr = _MountAttr(attr_set=MOUNT_ATTR_RDONLY)
    if libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, target.encode(), AT_RECURSIVE, ctypes.byref(attr),
                    ctypes.c_size_t(ctypes.sizeof(attr))) == 0:
        return
    if why := remount_read_only(libc, Path(target)):
        raise RootError(f"{target}: {why}")


def _covered(path: str, bound: list[str]) -> bool:
    return any(path == b or path.startswith(b.rstrip("/") + "/") for b in bound)


def _mount_point(old: Path, new: Path) -> None:
    """An empty directory or file at ``new`` (inside the new root's tmpfs) to mount ``old`` on."""
    if old.is_dir():
        new.mkdir(parents=True, exist_ok=True)
    else:
        new.parent.mkdir(parents=True, exist_ok=True)
        new.touch(exist_ok=True)


def enter_private_root(own: str, readable: list[str]) -> list[str]:
    """Move this process (in mount and user namespaces of its own, single-threaded) into its own root, as the
    module's docstring says. Returns the paths bound beyond the system's; raises ``RootError``, leaving the
    namespace's mounts as they were where it can, when a step fails."""
    libc = _libc()
    own = os.path.realpath(own)
    _check(libc.mount(b"none", b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None), "making the mounts private")
    _tmpfs(BASE, "mode=0700,size=1m")
    try:
        for sub in ("old", "new"):
            os.mkdir(f"{BASE}/{sub}", 0o700)
        _tmpfs(f"{BASE}/new", "mode=0755,size=1m")
        _pivot_root(BASE, f"{BASE}/old")
    except RootError:
        libc.umount2(BASE.encode(), MNT_DETACH)
        raise
    os.chdir("/")
    old, new = Path("/old"), Path("/new")
    bound = _bind_system(old, new)
    extra = []
    for path in sorted({os.path.realpath(p) for p in readable} | {own}, key=len):
        if path != own and (_covered(path, bound) or not os.path.exists(old / path.lstrip("/"))):
            continue  # inside a directory bound already (the system's, or another readable one), or absent
        if own.startswith(path.rstrip("/") + "/"):
            continue  # an ancestor of the worker's own directory: binding it would show other workers' dirs
        _mount_point(old / path.lstrip("/"), new / path.lstrip("/"))
        _bind(str(old / path.lstrip("/")), str(new / path.lstrip("/")), read_only=path != own)
        bound.append(path)
        extra.append(path)
    _check(libc.mount(None, b"/new", None, ctypes.c_ulong(MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV), None),
           "making the new root read-only")
    os.chdir("/new")
    _pivot_root(".", ".")  # the new root over the scaffolding, which is then detached with the old root
    _check(libc.umount2(b".", MNT_DETACH), "detaching the old root")
    os.chdir(own)
    return extra


def _bind_system(old: Path, new: Path) -> list[str]:
    """The system's directories into the new root (read-only but ``/proc``, whose writes Landlock refuses where
    it can), its top-level links as links, and the private tmpfs mounts."""
    bound = []
    for entry in sorted(os.scandir(old), key=lambda e: e.name):
        target = new / entry.name
        if entry.is_symlink():
            target.symlink_to(os.readlink(entry.path))
        elif entry.name in SYSTEM_DIRS and entry.is_dir():
            target.mkdir()
            _bind(entry.path, str(target), read_only=entry.name != "proc")  # a device's file is written all the same
            bound.append(f"/{entry.name}")
    for name, options in PRIVATE_TMPFS.items():
        target = new / name
        if not target.is_dir():
            if name.startswith("dev/"):
                continue  # no /dev/shm to cover
            target.mkdir()
        _tmpfs(str(target), options)
    return bound
