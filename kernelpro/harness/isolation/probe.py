"""What the sandbox gets on this machine, for ``kernelpro doctor``: a process walls itself in as a worker does,
in a worker's own directory with a worker's environment, then tries what an escaping candidate would (the
judge's environment, a loopback server, a Unix socket server, a program outside the toolchain, a file in a
protected directory and in the directory the doctor was started in) and reads which of the directories that
should be out of reach are read-only, which absent, and which writable. The program tried is not the shell: the
toolchain includes ninja and the shell it runs build steps through, since torch builds ``load_inline``
extensions with them."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING, Any

from kernelpro.harness.isolation.toolchain import foreign_program, toolchain_executables
from kernelpro.harness.isolation.walls import hide_this_process, isolate_worker
from kernelpro.harness.worker.dirs import make_worker_dir, worker_root
from kernelpro.harness.worker.sandbox import worker_environment

if TYPE_CHECKING:
    from kernelpro.environment import Check


def _code(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, str(exc.errno)) if exc.errno else str(exc)


def _seen(path: str, identity: list[int]) -> str:
    """How the worker sees a directory the judge knows by (device, inode): absent (or another directory there,
    such as an empty one of its own root), read-only, or writable."""
    try:
        info = os.stat(path)
    except OSError:
        return "hidden"
    if [info.st_dev, info.st_ino] != identity:
        return "hidden"
    return "read_only" if os.statvfs(path).f_flag & os.ST_RDONLY else "writable"


def _tries(probe: dict[str, Any]) -> dict[str, object]:
    """What an escaping candidate would try, from inside the walls."""
    found: dict[str, object] = {}
    try:
        with open(os.path.join(probe["planted"], "planted"), "w") as file:
            file.write("x")
        found["judge_files"] = "writable"
    except OSError as exc:
        found["judge_files"] = f"denied ({_code(exc)})"
    try:
        with open(f"/proc/{probe['judge']}/environ", "rb") as file:
            file.read(1)
        found["parent_environ"] = "readable"
    except OSError as exc:
        found["parent_environ"] = "not visible" if exc.errno == errno.ENOENT else f"denied ({_code(exc)})"
    try:
        with socket.create_connection(("127.0.0.1", probe["port"]), timeout=2):
            found["loopback"] = "connected"
    except OSError as exc:
        found["loopback"] = f"refused ({_code(exc)})"
    for key, address in (("unix_socket", probe["unix"]), ("abstract_socket", "\0" + probe["abstract"])):
        try:
            with socket.socket(socket.AF_UNIX) as client:
                client.settimeout(2)
                client.connect(address)
            found[key] = "connected"
        except OSError as exc:
            found[key] = f"refused ({_code(exc)})"
    if probe["program"] is None:
        found["program"] = "untried (every program tried is part of the toolchain here)"
    else:
        try:
            subprocess.run([probe["program"], "--version"], capture_output=True, stdin=subprocess.DEVNULL,
                           check=False, timeout=10)
            found["program"] = "ran"
        except OSError as exc:
            found["program"] = f"refused ({_code(exc)})"
    found["caller_dir"] = _seen(probe["caller"], probe["caller_identity"])
    if found["caller_dir"] != "hidden":
        try:
            with open(os.path.join(probe["caller"], probe["marker"]), "x"):
                pass
            found["caller_dir"] = "writable"
        except OSError as exc:
            found["caller_dir"] = f"visible, writes denied ({_code(exc)})"
    return found


def _probe_child(probe: dict[str, Any]) -> dict[str, object]:
    """In a fresh process: isolate as a worker does, then try. Run as ``python -m`` this module."""
    protections = isolate_worker(protected=[probe["planted"], *probe["others"]], confine=True)
    result: dict[str, object] = protections.as_dict()
    seen = {path: _seen(path, identity) for path, identity in probe["others"].items()}
    for state in ("read_only", "hidden", "writable"):
        result[state] = [path for path, how in seen.items() if how == state]
    return {**result, **_tries(probe)}


def _identities(paths: list[str]) -> dict[str, list[int]]:
    found = {}
    for path in paths:
        with contextlib.suppress(OSError):
            info = os.stat(path)
            found[path] = [info.st_dev, info.st_ino]
    return found


def probe_worker_isolation(protected: list[str] | None = None, timeout_s: float = 20.0) -> dict[str, object]:
    """Start a process that isolates itself as a worker does and report what it got and what it could reach:
    this process's environment (with this process undumpable, as the judge is), a loopback server, Unix socket
    servers (a file and an abstract name), a program outside the toolchain (``program_path``, None where this
    machine has none to try), and a file in this process's working directory (a name of its own, removed should
    it land). ``protected`` are the directories a worker must not write
    (``jobs.protected_paths``; by default only the one every worker's own is made in): the answer lists each
    as ``read_only``, ``hidden`` or ``writable``."""
    hide_this_process()
    others = [str(worker_root())] if protected is None else protected
    caller = os.getcwd()
    workdir = make_worker_dir("kernelpro-probe-")
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(socket.create_server(("127.0.0.1", 0)))
        planted = stack.enter_context(tempfile.TemporaryDirectory(prefix="kernelpro-probe-"))
        unix = stack.enter_context(socket.socket(socket.AF_UNIX))
        unix.bind(os.path.join(planted, "socket"))
        abstract = stack.enter_context(socket.socket(socket.AF_UNIX))
        abstract.bind("\0" + os.path.basename(workdir))
        for listener in (unix, abstract):
            listener.listen(1)
        marker = f"kernelpro-probe-{os.path.basename(workdir)}.toml"  # a name of its own: nothing of the user's
        environment = worker_environment(workdir=workdir)  # what a worker gets
        program = foreign_program(toolchain_executables(environment))
        probe = {"marker": marker, "port": server.getsockname()[1], "judge": os.getpid(), "planted": planted,
                 "unix": os.path.join(planted, "socket"), "abstract": os.path.basename(workdir), "caller": caller,
                 "caller_identity": _identities([caller]).get(caller, []), "others": _identities(others),
                 "program": program}
        try:
            command = [sys.executable, "-m", "kernelpro.harness.isolation.probe", json.dumps(probe)]
            proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False,
                                  cwd=workdir, env=environment)
        except (OSError, subprocess.SubprocessError) as exc:
            return {"error": f"the probe did not run: {exc}"}
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(caller, marker))  # should it have landed
    try:
        return {**json.loads(proc.stdout.strip().splitlines()[-1]), "program_path": program}
    except (ValueError, IndexError):
        return {"error": f"the probe failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"}


REFUSED_BY_DEFAULT = ("loopback", "unix_socket", "abstract_socket", "program")


def isolation_checks(protected: list[str] | None = None) -> list[Check]:
    """``kernelpro doctor``'s lines on the sandbox: what a worker gets here, and what an escaping candidate could
    reach; ``protected`` as for ``probe_worker_isolation``."""
    from kernelpro.environment import Check

    found = probe_worker_isolation(protected)
    if "error" in found:
        return [Check("sandbox", False, str(found["error"]))]
    applied = ", ".join(found["applied"]) or "nothing"  # type: ignore[arg-type]
    missing = "; ".join(f"no {name}: {why}" for name, why in found["missing"].items())  # type: ignore[union-attr]
    reached = [key for key in REFUSED_BY_DEFAULT if not str(found[key]).startswith(("refused", "untried"))]
    escape = (f"judge's environment {found['parent_environ']}, loopback {found['loopback']}, "
              f"Unix socket {found['unix_socket']}, abstract socket {found['abstract_socket']}, "
              f"{found['program_path'] or 'a program'} (outside the toolchain) {found['program']}, "
              f"judge's files {found['judge_files']}, "
              f"the caller's directory {found['caller_dir']}")
    writable = found["writable"]
    safe = (found["parent_environ"] != "readable" and not reached and found["judge_files"] != "writable"
            and found["caller_dir"] != "writable" and not writable)
    files = "; ".join(f"{state.replace('_', '-')}: {', '.join(found[state]) or 'nothing'}"  # type: ignore[arg-type]
                      for state in ("read_only", "hidden", "writable") if found[state] or state != "writable")
    return [Check("sandbox", safe, f"{applied}{'; ' + missing if missing else ''}"),
            Check("sandbox test", safe, escape),
            Check("sandbox files", not writable, files)]


if __name__ == "__main__":
    print(json.dumps(_probe_child(json.loads(sys.argv[1]))))
