"""A Landlock domain for a process that runs a candidate's code, and for everything it starts.

Always: no ``ptrace`` of and no ``/proc/<pid>/mem`` of any process outside it, and (by ABI) no TCP bind or
connect (4), no signals to processes outside and no abstract Unix sockets outside (6). For files, either:

- ``writable`` given (a worker): every write-type right (write, truncate, create, remove, link, rename) only
  beneath those directories and on the harmless device files (``/dev/null``...): no file anywhere else,
  a ``kernelpro.toml`` in the caller's directory or a ``.bashrc`` included, can be written, made or removed;
- or the older wall (a build made ahead): no write under ``/proc`` (``/proc/self/mem`` included).

With ``executable`` given, only those files (or the files beneath those directories) can be run: a toolchain's
compilers, ninja and the shell it runs build steps through, and Python; never a terminal multiplexer's client, a
downloader or any other program of the system. Landlock checks the ELF
interpreter of a program as it runs it, so the list must name the dynamic loader too (``isolation.toolchain``
does).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys

PR_SET_NO_NEW_PRIVS = 38
# The same syscall numbers on x86_64 and arm64 (the generic table).
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
WRITES_ABI1 = (WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO
               | MAKE_BLOCK | MAKE_SYM)
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
# Top-level directories the older wall refuses writes beneath.
NO_WRITE_ROOTS = {"proc"}
# Device files a worker may open for writing wherever writes are otherwise refused.
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _error() -> str:
    return os.strerror(ctypes.get_errno())


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where there is none."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _libc().syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def write_rights(abi: int) -> int:
    """Every write-type right this ABI knows."""
    return WRITES_ABI1 | (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)


def _allow(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> bool:
    """Grant ``rights`` beneath ``path`` (a directory) or on it (a file: only the rights a file can have)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not os.path.isdir(path):
            rights &= EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE
        rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        return libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)) == 0
    finally:
        os.close(fd)


def enter_landlock(applied: list[str], missing: dict[str, str], writable: list[str] | None = None,
                   executable: list[str] | None = None) -> None:
    """Restrict this thread (and what it starts) as the module's docstring says; record what it got."""
    abi = landlock_abi()
    if abi < 1:
        missing["landlock"] = "the kernel has no Landlock (Linux 5.13+ with landlock in its LSMs)"
        return
    libc = _libc()
    writes = write_rights(abi) if writable is not None else WRITE_FILE
    attr = _RulesetAttr(handled_access_fs=writes | (EXECUTE if executable is not None else 0))
    size = ctypes.sizeof(ctypes.c_uint64)  # the attribute grew over ABIs: pass only what this kernel knows
    if abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size += ctypes.sizeof(ctypes.c_uint64)
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size += ctypes.sizeof(ctypes.c_uint64)
    ruleset = libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        missing["landlock"] = f"landlock_create_ruleset failed: {_error()}"
        return
    try:
        if writable is None:
            for entry in os.scandir("/"):
                if entry.name not in NO_WRITE_ROOTS:
                    _allow(libc, ruleset, entry.path, WRITE_FILE)
        else:
            for path in writable:
                _allow(libc, ruleset, path, writes)
            for path in DEVICE_FILES:
                _allow(libc, ruleset, path, WRITE_FILE | TRUNCATE)
        for path in executable or []:
            _allow(libc, ruleset, path, EXECUTE)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(
                SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            missing["landlock"] = f"landlock_restrict_self failed: {_error()}"
            return
    finally:
        with contextlib.suppress(OSError):
            os.close(ruleset)
    applied.append(f"landlock (ABI {abi})")
    if writable is not None:
        applied.append("writes only in its own directory")
    if executable is not None:
        applied.append("runs only the compilers and Python")
    if abi < 4:
        missing["landlock TCP"] = f"Landlock ABI {abi} cannot restrict TCP (needs 4, Linux 6.7)"
    if abi < 6:
        missing["landlock scopes"] = (f"Landlock ABI {abi} cannot scope signals and abstract sockets "
                                      "(needs 6, Linux 6.12)")
