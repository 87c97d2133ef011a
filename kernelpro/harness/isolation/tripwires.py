"""Inside the worker: an audit hook (PEP 578) that blocks and records what a candidate does to reach outside.

Installed before any candidate code runs; Python offers no way to remove it. While a candidate's code is on
the stack it refuses, by raising ``PermissionError`` from the audited operation, and records:

- walking the garbage collector's objects (``gc.get_objects``, ``get_referrers``, ``get_referents``), however
  the candidate reached ``gc`` (``torch.cuda.graphs.gc`` is the same module);
- frames taken by the candidate's own code (``sys._getframe``, ``inspect.currentframe``, an exception's
  ``tb_frame``, a generator's ``gi_frame``): the judge's local variables (its expected outputs) are a few
  ``f_back`` away; and replacing a function's ``__code__`` (a detour);
- opening another process's ``/proc`` files, or ``/proc/self/mem`` for writing;
- connecting, binding or sending on a socket, and making a socket of any family but IPv4 and IPv6 (a Unix
  socket reaches processes outside the sandbox; a connected pair from ``socketpair`` reaches nothing);
- running a program (``subprocess``, ``os.exec*``, ``os.posix_spawn``, ``os.system``) from its own code: the
  kernel lets a worker run only the compilers, which the libraries it calls (Inductor, Triton) run themselves;
- looking up ``ptrace``, ``process_vm_readv``/``writev``, ``mprotect``, ``socket``, ``connect`` or an ``exec``
  or ``spawn`` function through ctypes.

A candidate that catches the error is rejected all the same (``tripped``). The hook is a net under the static
rules and the kernel's walls, not a wall itself: native code and ctypes writes into memory pass it by.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import sysconfig
from typing import Any

from kernelpro.harness.result import GuardFinding

CANDIDATE_FILE = os.sep + "candidate.py"
# Standard-library helpers that take a frame on their caller's behalf.
FRAME_HELPERS = (os.sep + "inspect.py",)
FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}
SNOOP_SYMBOLS = {"ptrace": "process_snooping", "process_vm_readv": "process_snooping",
                 "process_vm_writev": "self_modification", "mprotect": "self_modification",
                 "socket": "network_access", "connect": "network_access",
                 **{name: "background_process" for name in (
                     "execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "execveat", "fexecve",
                     "posix_spawn", "posix_spawnp", "system", "popen")}}
# Audit events that run a program, and the index of the program in their arguments.
PROGRAM_EVENTS = {"os.exec": 0, "os.posix_spawn": 0, "os.spawn": 1, "os.system": 0, "subprocess.Popen": 1}
IP_FAMILIES = {socket.AF_INET, socket.AF_INET6}
STDLIB = os.path.realpath(sysconfig.get_path("stdlib")) + os.sep
OTHER_PROC = re.compile(r"^/proc/(?P<who>\d+)(/|$)")
SELF_MEM = re.compile(r"^/proc/(self|thread-self|\d+)/(task/\d+/)?mem$")
WATCHED = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._getframe",
                     "sys._current_frames", "object.__getattr__", "object.__setattr__", "open", "socket.connect",
                     "socket.bind", "socket.sendto", "socket.sendmsg", "socket.__new__", "ctypes.dlsym",
                     *PROGRAM_EVENTS})

_tripped: list[tuple[str, str]] = []
_busy = False
_armed = False


def _frames() -> list[Any]:
    """The stack from the audited operation's caller outwards (this module's own frames left out)."""
    frames, frame = [], sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename != __file__:
            frames.append(frame)
        frame = frame.f_back
    return frames


def _candidate_on_stack() -> bool:
    return any(frame.f_code.co_filename.endswith(CANDIDATE_FILE) for frame in _frames())


def _called_by_candidate() -> bool:
    """The operation's own caller is the candidate's code (or a frame helper it called)."""
    for frame in _frames():
        name = frame.f_code.co_filename
        if not name.endswith(FRAME_HELPERS):
            return name.endswith(CANDIDATE_FILE)
    return False


def _candidate_runs_it() -> bool:
    """The first caller outside the standard library (``subprocess``, ``os``) is the candidate's code: a compiler
    that torch or Triton runs on its behalf is theirs, not the candidate's."""
    for frame in _frames():
        name = frame.f_code.co_filename
        if not name.startswith("<frozen ") and not os.path.realpath(name).startswith(STDLIB):
            return name.endswith(CANDIDATE_FILE)
    return False


def _program(event: str, args: tuple[Any, ...]) -> str:
    value = args[PROGRAM_EVENTS[event]] if len(args) > PROGRAM_EVENTS[event] else None
    if isinstance(value, (list, tuple)) and value:  # subprocess.Popen without an executable: its arguments
        value = value[0]
    return os.fsdecode(value) if isinstance(value, (str, bytes, os.PathLike)) else repr(value)


def _writes(args: tuple[Any, ...]) -> bool:
    mode, flags = (args + (None, None))[1:3]
    if isinstance(mode, str):
        return any(c in mode for c in "wa+x")
    return isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR))


def _judge(event: str, args: tuple[Any, ...]) -> tuple[str, str] | None:
    """(reason, what) when this event is a candidate reaching outside, else None."""
    if event.startswith("gc."):
        return ("judge_patch", f"called {event}, walking the judge's objects") if _candidate_on_stack() else None
    if event.startswith("sys."):
        return ("judge_patch", f"called {event}, reaching the judge's frames") if _called_by_candidate() else None
    if event == "object.__getattr__":
        if len(args) > 1 and args[1] in FRAME_ATTRS and _called_by_candidate():
            return "judge_patch", f"took a frame ({args[1]}), reaching the judge's frames and variables"
        return None
    if event == "object.__setattr__":
        if len(args) > 1 and args[1] == "__code__" and _candidate_on_stack():
            return "judge_patch", f"replaced the code of {getattr(args[0], '__qualname__', args[0])!r} (a detour)"
        return None
    if event == "open":
        path = args[0] if args and isinstance(args[0], str) else ""
        if not path.startswith("/proc/"):
            return None
        path = os.path.normpath(path)
        if SELF_MEM.match(path) and _writes(args) and _candidate_on_stack():
            return "self_modification", f"opened {path} for writing"
        match = OTHER_PROC.match(path)
        if match and int(match.group("who")) != os.getpid() and _candidate_on_stack():
            return "process_snooping", f"opened {path}, another process's file"
        return None
    if event == "socket.__new__":
        family = args[1] if len(args) > 1 else None
        if family in IP_FAMILIES or family == -1 or not _candidate_on_stack():
            return None
        if family == socket.AF_UNIX and any(f.f_code.co_name == "socketpair" for f in _frames()):
            return None  # a connected pair: it reaches nothing outside
        return "network_access", f"made a socket of family {family} (a Unix socket reaches outside the sandbox)"
    if event in PROGRAM_EVENTS:
        if not _candidate_runs_it():
            return None
        return "background_process", f"ran {_program(event, args)} (only the compilers run inside the sandbox)"
    if event.startswith("socket."):
        return ("network_access", f"{event.split('.')[1]} on a socket ({args[1:2]})") if _candidate_on_stack() else None
    if event == "ctypes.dlsym":
        name = args[1] if len(args) > 1 else None
        if name in SNOOP_SYMBOLS and _candidate_on_stack():
            return SNOOP_SYMBOLS[name], f"looked up {name} through ctypes"
    return None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    global _busy
    if event not in WATCHED or _busy:
        return
    _busy = True  # the checks take frames themselves, which is an audited event too
    try:
        found = _judge(event, args)
    finally:
        _busy = False
    if found is not None:
        _tripped.append(found)
        raise PermissionError(f"blocked by the judge: the candidate {found[1]}")


def arm() -> None:
    """Install the hook (once per process; it cannot be removed)."""
    global _armed
    if not _armed:
        sys.addaudithook(_hook)
        _armed = True


def tripped() -> list[GuardFinding]:
    """A finding for each attempt blocked since the last call."""
    found = list(dict.fromkeys(_tripped))
    _tripped.clear()
    return [GuardFinding(reason=reason, severity="reject", source="dynamic", message=what) for reason, what in found]
