"""Walls the kernel builds around a worker, and the judge's own process hidden from its workers.

A candidate is code from a model that may have read hostile text, so the worker that runs it is treated as
an attacker's process. Before any candidate code runs, ``isolate_worker`` puts it, where this machine allows
it unprivileged:

- in new **user, network, PID and mount namespaces**: no network interface but a loopback that is down, so
  no connection anywhere; no capability over any process outside (the kernel then refuses it ptrace-class
  access, ``environ`` and ``mem``, to every process outside); and a ``/proc`` of its own, in which no
  process outside the worker exists (no ancestor's ``environ``, ``cmdline`` or ``mem`` to open);
- in a **Landlock** domain (``isolation.landlock``): no ``ptrace`` of and no ``/proc/<pid>/mem`` of any process
  outside it (Landlock leaves their ``environ`` and ``maps`` readable: hiding those takes the PID namespace or,
  for the judge, ``hide_this_process`` with the user namespace), no signals or abstract Unix sockets outside
  it, no TCP bind or connect, and no writes under ``/proc`` (``/proc/self/mem`` included).

A worker that runs candidates (``confine=True``) gets more (``isolation.worker_walls``): a root of its own, writes
only in its own directory, only the toolchain to run (the compilers, ninja and its shell, Python), and no
Unix socket at all.

``hide_this_process`` makes a process that holds credentials (the judge, the CLI) undumpable, so a process
of the same user without ``CAP_SYS_PTRACE`` cannot read its environment or memory either. Everything here is
best effort and says what it got: ``Protections`` lists what was applied and why the rest was not.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import NoReturn

from kernelpro.harness.isolation.landlock import enter_landlock, landlock_abi  # noqa: F401 - re-exported

PR_SET_DUMPABLE = 4
# Where the kernel refuses unprivileged user namespaces, the sysctls that say so.
USERNS_HINT = (" (unprivileged user namespaces refused here: see kernel.unprivileged_userns_clone, "
               "user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns)")
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_PRIVATE, MS_REC = 2, 4, 8, 1 << 18, 1 << 14


@dataclass
class Protections:
    """What one process got: each protection applied, and for each one missing, why."""

    applied: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    """Walls left for a later step: a CUDA worker's socket filter, installed once CUDA has started."""

    def as_dict(self) -> dict[str, object]:
        walls: dict[str, object] = {"applied": self.applied, "missing": self.missing}
        if self.pending:
            walls["pending"] = self.pending
        return walls


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _error() -> str:
    return os.strerror(ctypes.get_errno())


def hide_this_process() -> bool:
    """Make this process undumpable: its ``/proc`` files (environment, memory) become readable only with
    ``CAP_SYS_PTRACE``. Core dumps of it stop too. Returns whether it worked (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        return _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    return False


def enter_namespaces(protections: Protections, without_user_namespace: str = "") -> bool:
    """New user, network and mount namespaces for this (single-threaded) process, the user mapped to itself,
    and a PID namespace for its children where a /proc of its own can be mounted there. Returns whether the PID
    namespace was made: then the caller must fork (``_become_init``). ``without_user_namespace``: why this process
    makes none (the others then need CAP_SYS_ADMIN)."""
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    together = not without_user_namespace and libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS) == 0
    if together:
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError as exc:
            protections.missing["user namespace"] = f"mapping the user failed: {exc.strerror}"
        else:
            protections.applied.append("user namespace")
    else:
        protections.missing["user namespace"] = without_user_namespace or \
            f"unshare(CLONE_NEWUSER) failed: {_error()}{USERNS_HINT}"
        # Without a user namespace these need CAP_SYS_ADMIN (a worker run as root has it).
        if libc.unshare(CLONE_NEWNET | CLONE_NEWNS) != 0:
            protections.missing["network namespace"] = f"unshare(CLONE_NEWNET) failed: {_error()}"
            protections.missing["pid namespace"] = "no namespaces"
            return False
    protections.applied.append("network namespace")
    # Without a /proc of its own a PID namespace would mislead (psutil would take the host's init for the
    # worker), so it is made only where a trial child could mount one.
    if not _proc_of_its_own_works():
        protections.missing["pid namespace"] = "no /proc of its own can be mounted here (a masked /proc?)"
        return False
    if libc.unshare(CLONE_NEWPID) != 0:
        protections.missing["pid namespace"] = f"unshare(CLONE_NEWPID) failed: {_error()}"
        return False
    return True


def _mount_own_proc() -> bool:
    """Private mounts first, so the new /proc is seen by this mount namespace only."""
    libc = _libc()
    return libc.mount(b"none", b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None) == 0 and libc.mount(
        b"proc", b"/proc", b"proc", ctypes.c_ulong(MS_NOSUID | MS_NODEV | MS_NOEXEC), None) == 0


def _proc_of_its_own_works() -> bool:
    """Whether a child in PID and mount namespaces of its own can mount its /proc (tried, then thrown away)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if _libc().unshare(CLONE_NEWPID | CLONE_NEWNS) == 0:
                inner = os.fork()
                if inner == 0:
                    os._exit(0 if _mount_own_proc() else 1)
                status = os.waitpid(inner, 0)[1]
                code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1
        finally:
            os._exit(code)
    status = os.waitpid(pid, 0)[1]
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _become_init(protections: Protections) -> None:
    """Fork into the new PID namespace: the child (its first process) goes on as the worker, with a /proc of
    its own in which no process outside exists; this process stays outside to pass on how the child ended."""
    judge = os.getppid()
    child = os.fork()
    if child:
        _supervise(child, judge)
    if _mount_own_proc():
        protections.applied.append("pid namespace")
    else:  # the trial said it would work; should it not, no process in here may trust /proc
        os.write(2, f"kernelpro worker: mounting its own /proc failed ({_error()})\n".encode())
        os._exit(70)


def _supervise(child: int, judge: int) -> NoReturn:
    """Outside the PID namespace: wait for the worker and end the same way (the judge reads a crash from the
    exit status), or kill it once the judge is gone (its ``getppid`` no longer tells it)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, 65536)  # the judge's pipes must reach end-of-file when the worker dies

    # No threads here: a process that unshared a PID namespace cannot start any. SIGCHLD wakes the wait.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    while True:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            break
        if os.getppid() != judge:
            os.kill(child, signal.SIGKILL)  # the namespace's first process: everything inside goes with it
        signal.sigtimedwait({signal.SIGCHLD}, 0.5)
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


# CUDA's driver fails to initialise inside a Landlock domain (cudaGetDeviceCount: error 304, "OS call failed",
# seen on an H200 under Linux 6.18), so a worker that judges on the GPU keeps the namespaces only.
LANDLOCK_BREAKS_CUDA = "not applied to CUDA workers: the CUDA driver fails to initialise inside a Landlock domain"


def isolate_worker(enabled: bool = True, landlock: bool = True, protected: list[str] | None = None,
                   confine: bool = False, sockets_later: bool = False, without_user_namespace: str = "") -> Protections:
    """Every wall this machine allows around the calling process; call it before any thread or candidate code.
    ``landlock=False`` leaves Landlock out (see ``LANDLOCK_BREAKS_CUDA``); ``protected`` directories become
    read-only inside it and its capabilities are dropped (``isolation.mounts``). ``confine`` (a worker that runs
    candidates) adds the walls of ``isolation.worker_walls``: a root of its own with its working directory the only
    one it may write, only the toolchain to run, and no Unix socket. ``without_user_namespace``: why it makes no
    user namespace (``enter_namespaces``)."""
    protections = Protections()
    if not enabled:
        protections.missing["all"] = "harness.isolate is off"
        return protections
    if not sys.platform.startswith("linux"):
        protections.missing["all"] = f"namespaces and Landlock are Linux's ({sys.platform})"
        return protections
    if enter_namespaces(protections, without_user_namespace):
        _become_init(protections)
    if confine:
        from kernelpro.harness.isolation.worker_walls import confine_worker

        confine_worker(protections, protected or [], landlock, sockets_later)
        return protections
    if protected is not None:
        _protect(protected, protections)
    if landlock:
        enter_landlock(protections.applied, protections.missing)  # last: the user namespace's maps are under /proc
    else:
        protections.missing["landlock"] = LANDLOCK_BREAKS_CUDA
    return protections


def _protect(paths: list[str], protections: Protections) -> bool:
    """The judge's directories read-only in the worker's own mount namespace, then no capabilities left to
    undo that with (``isolation.mounts``)."""
    import tempfile

    from kernelpro.harness.isolation import mounts as isolation_mounts

    if "user namespace" not in protections.applied and os.geteuid() != 0:
        protections.missing["read-only judge files"] = "no user namespace: no mount namespace of its own to remount in"
        return False
    libc = _libc()
    if libc.mount(b"none", b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE), None) != 0:
        protections.missing["read-only judge files"] = f"making the mounts private failed: {_error()}"
        return False
    done, around, left = isolation_mounts.read_only(paths, writable=[os.getcwd(), tempfile.gettempdir()])
    if done:
        protections.applied.append("read-only judge files")
    protections.applied += [f"read-only {path} but for the worker's own directory" for path in around]
    for path, why in left.items():
        protections.missing[f"read-only {path}"] = why
    drop_capabilities(protections)
    return True


def drop_capabilities(protections: Protections) -> None:
    from kernelpro.harness.isolation import mounts as isolation_mounts

    if why_not := isolation_mounts.drop_capabilities():
        protections.missing["no capabilities"] = why_not
    else:
        protections.applied.append("no capabilities")
