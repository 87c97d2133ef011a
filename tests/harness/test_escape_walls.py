"""Out of the sandbox through what a network namespace does not cover, on the real kernel: Unix sockets (a file
or an abstract name), programs run from the worker, and the files of the directory the judge was started in.

Each hostile candidate is judged through the real judge and, where the static rules would stop it first, past
them too, so the walls and the tripwires answer alone; its honest twin passes behind the same walls.
"""

from __future__ import annotations

import secrets
import socket
from pathlib import Path

import pytest

from kernelpro.harness.isolation.landlock import landlock_abi
from kernelpro.harness.isolation.probe import isolation_checks
from kernelpro.harness.isolation.toolchain import foreign_program, toolchain_executables
from kernelpro.harness.judge import judge
from tests.conftest import candidate, problem
from tests.harness.test_sandbox_walls import PROBE, CountingServer, judged_past_static_checks, needs

SHELL_RAN = "kernelpro-shell-ran"
# What the kernel offers, not what the worker got: a machine that has these must give the walls built on them.
seccomp = pytest.mark.skipif("Seccomp:" not in Path("/proc/self/status").read_text(),
                             reason="this kernel has no seccomp")
landlock = pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock")


class UnixServer(CountingServer):
    """A real Unix socket server (a path, or an abstract name when ``address`` starts with a NUL), as a terminal
    multiplexer's."""

    def __init__(self, address: str) -> None:
        self.address = address
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(address)
        sock.listen(4)
        super().__init__(sock)


@pytest.fixture(params=["file", "abstract"])
def unix_server(request, tmp_path):
    address = (str(tmp_path / "tmux-0" / "default") if request.param == "file"
               else f"\0kernelpro-test-{secrets.token_hex(6)}")
    if request.param == "file":
        (tmp_path / "tmux-0").mkdir()
    server = UnixServer(address)
    with socket.socket(socket.AF_UNIX) as client:  # from outside the sandbox a connection gets through
        client.connect(address)
    server.took_one_connection(polls=100)
    yield server
    server.close()


def pointed_at(name: str, address: str) -> str:
    source = candidate(name)
    assert 'SOCKET = "/tmp/tmux-0/default"' in source
    return source.replace('SOCKET = "/tmp/tmux-0/default"', f"SOCKET = {address!r}")


@seccomp
def test_a_unix_socket_server_outside_gets_no_connection(unix_server, settings):
    results = [judge(problem("scale_relu"), pointed_at(name, unix_server.address), device="cpu", settings=settings)
               for name in ("cheat_unix_socket", "cheat_unix_socket_hidden")]
    results += [judged_past_static_checks("", settings, pointed_at(name, unix_server.address), mode=mode)
                for name, mode in (("cheat_unix_socket", "fresh"), ("cheat_unix_socket_hidden", "persistent"))]
    for result in results:
        assert (result.status, result.reason) == ("rejected", "network_access"), result.message
    assert all(g.source == "dynamic" for g in results[-1].guards if g.severity == "reject")
    assert unix_server.accepted == 0


NATIVE_UNIX_SOCKET = """
import ctypes
import os

import torch.nn as nn

SYS_SOCKET = {"x86_64": 41, "aarch64": 198}[os.uname().machine]


class ModelNew(nn.Module):
    \"\"\"A Unix socket through the raw system call, which no audit hook sees: only the kernel can refuse.\"\"\"

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        fd = ctypes.CDLL(None, use_errno=True).syscall(SYS_SOCKET, 1, 1, 0)
        print("unix socket:", os.strerror(ctypes.get_errno()) if fd < 0 else "made")
        return x.clamp_min(0) * self.scale
"""


@seccomp
def test_the_kernel_refuses_a_unix_socket_to_native_code(settings):
    result = judged_past_static_checks("", settings, NATIVE_UNIX_SOCKET)
    assert result.status == "ok", result.message
    assert "unix socket: Operation not permitted" in result.worker_output, result.worker_output


@needs("user namespace")
@landlock
@pytest.mark.parametrize("name", ["cheat_spawn_shell", "cheat_spawn_shell_hidden"])
def test_a_shell_never_runs(name, settings):
    judged = judge(problem("scale_relu"), candidate(name), device="cpu", settings=settings)
    past_static = judged_past_static_checks("", settings, candidate(name), mode="persistent")
    for result in (judged, past_static):
        assert (result.status, result.reason) == ("rejected", "background_process"), result.message
        assert SHELL_RAN not in result.worker_output
    assert "/bin/sh" in past_static.message and "only the compilers" in past_static.message


RUNS_A_SHELL = {
    "posix_spawn": "import posix\nposix.posix_spawn('/bin/sh', ['sh', '-c', COMMAND], {})",
    "execv": "os.execv('/bin/sh', ['sh', '-c', COMMAND])",
    "subprocess": "import subprocess\nsubprocess.run(['/bin/sh', '-c', COMMAND], check=False)",
}


def running_a_shell(call: str) -> str:
    body = "\n".join("        " + line for line in call.splitlines())
    return f"""
import os

import torch.nn as nn

COMMAND = "echo {SHELL_RAN}"


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
{body}
        return x.clamp_min(0) * self.scale
"""


@needs("user namespace")
@landlock
@pytest.mark.parametrize("how", sorted(RUNS_A_SHELL))
def test_running_a_shell_is_refused_with_a_named_verdict(how, settings):
    result = judged_past_static_checks("", settings, running_a_shell(RUNS_A_SHELL[how]))
    assert (result.status, result.reason) == ("rejected", "background_process"), result.message
    assert "ran /bin/sh" in result.message
    assert SHELL_RAN not in result.worker_output


FOREIGN = foreign_program(toolchain_executables())
NATIVE_EXEC = """
import ctypes
import os

import torch.nn as nn

SYS_EXECVE = {{"x86_64": 59, "aarch64": 221}}[os.uname().machine]
ARGV = (ctypes.c_char_p * 3)({program!r}, b"--version", None)
ENVP = (ctypes.c_char_p * 1)(None)


class ModelNew(nn.Module):
    \"\"\"execve through the raw system call, which no audit hook sees: only the kernel can refuse.\"\"\"

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        ctypes.CDLL(None, use_errno=True).syscall(SYS_EXECVE, {program!r}, ARGV, ENVP)
        print("execve:", os.strerror(ctypes.get_errno()))
        return x.clamp_min(0) * self.scale
"""


@needs("user namespace")
@landlock
@pytest.mark.skipif(FOREIGN is None, reason="this machine has no program outside the toolchain to try")
def test_the_kernel_refuses_to_run_a_program_outside_the_toolchain_for_native_code(settings):
    """The shell is part of the toolchain (ninja runs torch's extension builds through it); ``env`` or ``ls`` is
    not, and a successful execve would replace the worker, leaving no verdict."""
    result = judged_past_static_checks("", settings, NATIVE_EXEC.format(program=FOREIGN.encode()))
    assert result.status == "ok", result.message
    assert "execve: Permission denied" in result.worker_output, result.worker_output


@needs("runs only the compilers")
@pytest.mark.skipif(FOREIGN is None, reason="this machine has no program outside the toolchain to try")
def test_the_doctor_tries_a_program_outside_the_toolchain_and_finds_it_refused():
    assert PROBE["program_path"] == FOREIGN
    assert str(PROBE["program"]).startswith("refused"), PROBE
    escape = next(check for check in isolation_checks() if check.name == "sandbox test")
    assert escape.ok and f"{FOREIGN} (outside the toolchain) refused" in escape.detail, escape.detail


THREAD_POOL = """
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    \"\"\"Halves of the batch on a pool's threads, joined before the call returns.\"\"\"

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        with ThreadPoolExecutor(max_workers=2) as pool:
            halves = list(pool.map(lambda part: torch.relu(part) * self.scale, x.chunk(2)))
        return torch.cat(halves)
"""


def test_a_thread_pool_works_behind_the_walls(settings):
    """Past the static rules (which refuse ``concurrent`` on their own): no socket or program is needed."""
    result = judged_past_static_checks("", settings, THREAD_POOL)
    assert result.status == "ok", result.message


@pytest.fixture
def caller_dir(tmp_path, monkeypatch) -> Path:
    """The directory the judge is started in, with a provider's key in its .env, and a HOME with one too."""
    caller, home = tmp_path / "project", tmp_path / "home"
    for directory in (caller, home):
        directory.mkdir()
        (directory / ".env").write_text(f"OPENAI_API_KEY=sk-test-{secrets.token_hex(12)}\n")
    monkeypatch.chdir(caller)
    monkeypatch.setenv("HOME", str(home))
    return caller


@needs("user namespace")
@pytest.mark.parametrize("mode", ["fresh", "persistent"])
def test_the_callers_directory_and_home_are_out_of_reach(mode, caller_dir, settings):
    """No kernelpro.toml planted where the next `kernelpro eval` starts, no key read from a .env, and the
    worker's mount table names neither directory."""
    settings.harness.worker_mode = mode
    home = Path(caller_dir.parent / "home")
    targets = [str(caller_dir), str(home)]
    source = candidate("cheat_plant_config").replace("TARGET_DIRS = []", f"TARGET_DIRS = {targets!r}")
    result = judge(problem("scale_relu"), source, device="cpu", settings=settings)
    assert (result.status, result.reason) == ("incorrect", "value_mismatch"), result.message
    assert not (caller_dir / "kernelpro.toml").exists() and not (home / "kernelpro.toml").exists()
    for directory in (caller_dir, home):
        assert (directory / ".env").read_text().strip().split("=")[1] not in result.model_dump_json()
    mounts = next(line for line in result.worker_output.splitlines() if line.startswith("mount points:"))
    assert str(caller_dir) not in mounts and str(home) not in mounts, mounts
    assert "stolen: {}" in result.worker_output


def test_scratch_files_in_its_own_directories_are_fine(caller_dir, settings):
    result = judge(problem("scale_relu"), candidate("honest_scratch_files"), device="cpu", settings=settings)
    assert result.status == "ok", result.message
