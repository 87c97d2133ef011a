"""The judge's own files read-only inside a worker, and the worker's capabilities dropped so it stays that way.

A worker in user and mount namespaces of its own holds every capability over them, so a candidate could
otherwise mount, unmount and remount at will. After ``isolate_worker`` has made its namespaces, ``read_only``
bind-mounts each protected directory (``jobs.protected_paths``: the run directories with their checkpoints and
results, kernelpro's home with the search memory, the caches the judge and the user's own programs load from,
the Python installation, HOME) onto itself, read-only; ``drop_capabilities`` then empties every capability set,
the bounding set included. From there no candidate can write into those directories, undo the mounts or mount
anything: a module planted under another candidate's cache key, a ``.pth`` file for the next Python, a line in
``~/.bashrc`` or a verdict edited in a run's checkpoint is out of reach.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_RELATIME = 1024, 2048, 4096, 1 << 14, 1 << 21
# A remount inside a user namespace must keep the flags its parent mount locked (nosuid, nodev, atime...).
_KEPT_FLAGS = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: MS_NOEXEC, os.ST_NOATIME: MS_NOATIME,
               os.ST_NODIRATIME: MS_NODIRATIME, os.ST_RELATIME: MS_RELATIME}
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _error() -> str:
    return os.strerror(ctypes.get_errno())


def _inside(path: Path, other: Path) -> bool:
    return path == other or other in path.parents


def read_only(paths: list[str], writable: list[str]) -> tuple[list[str], list[str], dict[str, str]]:
    """Each existing directory of ``paths`` read-only in this mount namespace, but for any directory of ``writable``
    (the worker's own working and temporary directories) inside it: that one is bind-mounted onto itself first, so
    it comes along as a writable mount of its own when its holder is made read-only. Returns the directories made
    read-only, those of them that hold such a writable one, and, for each left writable, why."""
    libc = _libc()
    done: list[str] = []
    around: list[str] = []
    left: dict[str, str] = {}
    keep = [Path(p).resolve() for p in writable]
    # An absent directory has nothing to tamper with yet; a later one is made by the judge.
    protected = [path for path in dict.fromkeys(Path(raw).expanduser().resolve() for raw in paths) if path.is_dir()]
    unkept: dict[Path, str] = {}
    for own in [k for k in keep if any(_inside(k, path) and k != path for path in protected)]:
        if why := _bind(libc, own):
            unkept[own] = why
    for path in protected:
        inner = [k for k in keep if _inside(k, path)]
        if path in inner:
            left[str(path)] = "it is the worker's own working or temporary directory"
            continue
        if failed := [f"{k} could not be kept writable ({unkept[k]})" for k in inner if k in unkept]:
            left[str(path)] = f"it holds the worker's own directory: {'; '.join(failed)}"
            continue
        if why := _bind(libc, path) or remount_read_only(libc, path):
            left[str(path)] = why
            continue
        done.append(str(path))
        if inner:
            around.append(str(path))
    # The working directory was entered before these mounts, beneath them: enter it again through them, or a
    # relative path (``../..``) would reach the protected directories around it on the writable mount below.
    os.chdir(os.getcwd())
    return done, around, left


def _bind(libc: ctypes.CDLL, path: Path) -> str | None:
    target = str(path).encode()
    if libc.mount(target, target, None, ctypes.c_ulong(MS_BIND | MS_REC), None) != 0:
        return f"bind mount failed: {_error()}"
    return None


def remount_read_only(libc: ctypes.CDLL, path: Path) -> str | None:
    """The bind mount at ``path`` read-only (its own mount only: those beneath it keep their flags)."""
    target = str(path).encode()
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    vfs = os.statvfs(path).f_flag
    for st, ms in _KEPT_FLAGS.items():
        if vfs & st:
            flags |= ms
    if libc.mount(None, target, None, ctypes.c_ulong(flags), None) != 0:
        why = f"read-only remount failed: {_error()}"
        libc.umount2(target, 2)  # MNT_DETACH: leave the directory as it was
        return why
    return None


def drop_capabilities() -> str | None:
    """Empty this process's capability sets (bounding and ambient first, then effective, permitted and
    inheritable). Returns None, or why it failed. The worker's user is mapped to itself, not to root, so no
    later ``execve`` gives any back."""
    libc = _libc()
    try:
        last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # needs CAP_SETPCAP, which the namespace's creator holds
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(version=LINUX_CAPABILITY_VERSION_3, pid=0)
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        return f"capset failed: {_error()}"
    effective = effective_capabilities()
    return None if effective == 0 else f"capabilities left after capset: {effective:#x}"


def effective_capabilities() -> int:
    """This process's effective capability set, from ``/proc/self/status`` (-1 where unreadable)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return -1
