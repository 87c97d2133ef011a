"""Starts a suite's child process so that it dies with the driver: ``python -m kernelpro.suite.orphan_guard
PARENT_PID COMMAND...`` asks the kernel for SIGKILL when its parent goes (``PR_SET_PDEATHSIG``, kept across
``exec``), then becomes COMMAND. A driver killed with SIGKILL therefore leaves no optimisation running on its
own, and a resumed suite never runs the same problem twice at once. (Its judging workers follow their parent.)
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> None:
    parent, command = int(argv[0]), argv[1:]
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the driver's own timeouts still end a hung child
        pass
    if os.getppid() != parent:  # the driver died before the request took effect
        sys.exit(137)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
