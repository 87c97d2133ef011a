"""What the sandbox gets on this machine, for ``kernelpro doctor``: a process walls itself in as a worker does,
in a worker's own directory with a worker's environment, then tries what a snooping candidate would (the
judge's environment, a loopback server, a file in a protected directory) and reads which of the directories
that should be read-only are."""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING

from kernelpro.harness.isolation import hide_this_process, isolate_worker
from kernelpro.harness.sandbox import worker_environment
from kernelpro.harness.worker_dirs import make_worker_dir, worker_root

if TYPE_CHECKING:
    from kernelpro.environment import Check


def _probe_child(port: int, judge: int, protected: str, others: list[str]) -> dict[str, object]:
    """In a fresh process: isolate, then try what a snooping candidate would. Run as ``python -m`` this module."""
    protections = isolate_worker(protected=[protected, *others])
    result: dict[str, object] = protections.as_dict()
    # Read from the mounts, not tried: a write that got through would land in the user's own directories.
    present = [path for path in others if os.path.isdir(path)]
    result["read_only"] = [path for path in present if os.statvfs(path).f_flag & os.ST_RDONLY]
    result["writable"] = [path for path in present if path not in result["read_only"]]
    try:
        with open(os.path.join(protected, "planted"), "w") as file:
            file.write("x")
        result["judge_files"] = "writable"
    except OSError as exc:
        result["judge_files"] = f"denied ({errno.errorcode.get(exc.errno or 0, exc.errno)})"
    try:
        with open(f"/proc/{judge}/environ", "rb") as file:
            file.read(1)
        result["parent_environ"] = "readable"
    except OSError as exc:
        result["parent_environ"] = ("not visible" if exc.errno == errno.ENOENT
                                    else f"denied ({errno.errorcode.get(exc.errno, exc.errno)})")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            result["loopback"] = "connected"
    except OSError as exc:
        result["loopback"] = f"refused ({errno.errorcode.get(exc.errno or 0, exc.errno) if exc.errno else exc})"
    return result


def probe_worker_isolation(protected: list[str] | None = None, timeout_s: float = 20.0) -> dict[str, object]:
    """Start a process that isolates itself as a worker does and report what it got and what it could reach:
    this process's environment (with this process undumpable, as the judge is) and a loopback server.
    ``protected`` are the directories a worker gets read-only (``jobs.protected_paths``; by default only the one
    every worker's own is made in); ``writable`` in the answer lists those of them that were not."""
    hide_this_process()
    others = [str(worker_root())] if protected is None else protected
    workdir = make_worker_dir("kernelpro-probe-")
    with socket.create_server(("127.0.0.1", 0)) as server, tempfile.TemporaryDirectory(
            prefix="kernelpro-probe-") as planted:
        port = server.getsockname()[1]
        try:
            command = [sys.executable, "-m", "kernelpro.harness.isolation_probe", str(port), str(os.getpid()),
                       planted, *others]
            proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False,
                                  cwd=workdir, env=worker_environment(workdir=workdir))  # what a worker gets
        except (OSError, subprocess.SubprocessError) as exc:
            return {"error": f"the probe did not run: {exc}"}
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"the probe failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"}


def isolation_checks(protected: list[str] | None = None) -> list[Check]:
    """``kernelpro doctor``'s lines on the sandbox: what a worker gets here, and what a snoop could reach;
    ``protected`` as for ``probe_worker_isolation``."""
    from kernelpro.environment import Check

    found = probe_worker_isolation(protected)
    if "error" in found:
        return [Check("sandbox", False, str(found["error"]))]
    applied = ", ".join(found["applied"]) or "nothing"  # type: ignore[arg-type]
    missing = "; ".join(f"no {name}: {why}" for name, why in found["missing"].items())  # type: ignore[union-attr]
    snoop = (f"judge's environment {found['parent_environ']}, loopback {found['loopback']}, "
             f"judge's files {found['judge_files']}")
    read_only, writable = found["read_only"], found["writable"]
    safe = (found["parent_environ"] != "readable" and str(found["loopback"]).startswith("refused")
            and found["judge_files"] != "writable" and not writable)
    files = (f"read-only: {', '.join(read_only) or 'nothing'}"  # type: ignore[arg-type]
             + (f"; writable: {', '.join(writable)}" if writable else ""))  # type: ignore[arg-type]
    return [Check("sandbox", safe, f"{applied}{'; ' + missing if missing else ''}"),
            Check("sandbox test", safe, snoop),
            Check("sandbox files", not writable, files)]


if __name__ == "__main__":
    print(json.dumps(_probe_child(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:])))
