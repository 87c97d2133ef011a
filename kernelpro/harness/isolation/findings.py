"""Inside the worker: what a candidate that runs into the sandbox's walls shows, turned into guard findings.

The walls themselves are the kernel's (``isolation``): they stop a snooping candidate whether or not anyone
notices. Noticing makes the verdict say why. A candidate that lets the error from a wall escape (another
process's ``/proc`` files missing or denied, a connection the network namespace or Landlock refused, a
write to ``/proc/self/mem`` denied) is rejected with the reason that names its attempt, together with
whatever the worker's ``tripwires`` recorded (which also see the attempts a candidate catches).
"""

from __future__ import annotations

import errno
import os
import re
import socket

from kernelpro.harness.isolation import tripwires
from kernelpro.harness.result import GuardFinding

WALL_ERRNOS = {errno.EACCES, errno.EPERM, errno.ENOENT, errno.ESRCH}
NETWORK_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL, errno.EACCES, errno.EPERM,
                  errno.ECONNREFUSED}
PROC_PATH = re.compile(r"^/proc/(?P<who>[^/]+)(?P<rest>/.*)?$")


def _finding(reason: str, message: str) -> GuardFinding:
    return GuardFinding(reason=reason, severity="reject", source="dynamic", message=message)


def wall_hit(exc: BaseException) -> GuardFinding | None:
    """The finding for an exception that a wall of the sandbox raised, or None for any other exception."""
    if isinstance(getattr(exc, "reason", None), OSError):  # urllib's URLError wraps the socket's error
        exc = exc.reason
    if not isinstance(exc, OSError) or exc.errno is None:
        return None
    filename = str(exc.filename) if exc.filename is not None else ""
    match = PROC_PATH.match(os.path.normpath(filename)) if filename.startswith("/proc/") else None
    if match and exc.errno in WALL_ERRNOS:
        who, rest = match.group("who"), match.group("rest") or ""
        if who in ("self", "thread-self", str(os.getpid())):
            if rest.startswith("/mem"):
                return _finding("self_modification", f"opening {filename} failed ({os.strerror(exc.errno)})")
            return None
        if who.isdigit():
            return _finding("process_snooping", f"tried to open {filename}, another process's file "
                                                f"({os.strerror(exc.errno)})")
        return None
    if exc.errno in NETWORK_ERRNOS and not filename and _raised_by_socket(exc):
        return _finding("network_access", f"a network connection failed inside the sandbox ({exc})")
    return None


def findings_for(exc: BaseException) -> list[GuardFinding]:
    """What the candidate's escaping exception shows: the tripwires it set off and the wall it hit, if any."""
    hit = wall_hit(exc)
    return [*tripwires.tripped(), *([hit] if hit else [])]


def _raised_by_socket(exc: BaseException) -> bool:
    """Whether the frame the error came from holds a socket (``socket.create_connection``, ``s.connect``)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and any(isinstance(value, socket.socket) for value in tb.tb_frame.f_locals.values())
