"""The sandbox against hostile candidates, on the real kernel: namespaces, Landlock, the audit hook, real sockets.

Each wall is tested where this machine gives it (``kernelpro doctor`` says which); a test of a wall the machine
lacks is skipped with the reason the probe found.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
import sys
import threading

import pytest

from kernelpro.harness.isolation.probe import probe_worker_isolation
from kernelpro.harness.jobs import protected_paths
from kernelpro.harness.judge import classify, judge, make_job
from kernelpro.harness.worker.handle import LongLivedWorker
from kernelpro.harness.worker.sandbox import run_worker
from tests.conftest import candidate, problem
from tests.support import session_home

PROBE = probe_worker_isolation()
APPLIED = " ".join(PROBE.get("applied", []))


def needs(*walls: str):
    missing = [w for w in walls if w not in APPLIED]
    return pytest.mark.skipif(bool(missing), reason=f"this machine gives no {', '.join(missing)}: {PROBE}")


def judged_past_static_checks(name: str, settings, source: str | None = None, mode: str = "fresh"):
    """Straight into a worker (fresh, or long-lived), as if the static rules had missed it: the walls must hold
    alone."""
    job = make_job(problem("scale_relu"), source or candidate(name), "cpu", settings)
    if mode == "fresh":
        return classify(run_worker(job, settings.harness), settings)
    worker = LongLivedWorker("cpu", settings.harness, job["protected_paths"])
    try:
        return classify(worker.run(job), settings)
    finally:
        worker.stop()


@pytest.fixture
def secret(monkeypatch) -> str:
    """A credential in the judge's own environment, as a provider's key would be."""
    value = f"sk-test-{secrets.token_hex(12)}"
    monkeypatch.setenv("OPENAI_API_KEY", value)
    return value


class CountingServer:
    """A real server on a listening socket that records every connection it accepts."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.settimeout(0.2)
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            connection.close()

    def took_one_connection(self, polls: int = 50) -> None:
        """Wait for the one connection a test made from outside the sandbox, then count from zero again."""
        for _ in range(polls):
            if self.accepted:
                break
            threading.Event().wait(0.05)
        assert self.accepted == 1
        self.accepted = 0

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


class LoopbackServer(CountingServer):
    """A real TCP server on 127.0.0.1."""

    def __init__(self) -> None:
        super().__init__(socket.create_server(("127.0.0.1", 0)))
        self.port = self.sock.getsockname()[1]


@pytest.fixture
def server():
    server = LoopbackServer()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5):
        pass  # the server works: from outside the sandbox, a connection gets through
    server.took_one_connection()
    yield server
    server.close()


def with_port(name: str, port: int) -> str:
    source = candidate(name)
    assert "PORT = 9" in source
    return source.replace("PORT = 9", f"PORT = {port}")


def test_every_verdict_says_which_walls_the_worker_had(settings):
    result = judge(problem("scale_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert result.details["isolation"]["applied"] == PROBE["applied"]


@needs("pid namespace")
@pytest.mark.parametrize("name", ["cheat_proc_environ", "cheat_proc_environ_hidden"])
def test_an_ancestors_environment_is_out_of_reach(name, secret, settings):
    result = judge(problem("scale_relu"), candidate(name), device="cpu", settings=settings)
    assert (result.status, result.reason) == ("rejected", "process_snooping"), result.message
    assert secret not in result.model_dump_json()


@needs("pid namespace")
@pytest.mark.parametrize("mode", ["fresh", "persistent"])
def test_past_every_check_a_snoop_finds_nothing(mode, secret, settings):
    """With the static rules out of the way, the walls: no ancestor to read."""
    result = judged_past_static_checks("cheat_proc_environ", settings, mode=mode)
    assert secret not in result.model_dump_json()
    if mode == "fresh":
        assert result.status == "ok", result.message  # it computes the right answer once it has found nothing
        assert "stolen: []" in result.worker_output
    else:  # a job runs in a fork of the worker: its one ancestor is the worker, whose file the audit hook refuses
        assert (result.status, result.reason) == ("rejected", "process_snooping"), result.message
        assert "/proc/1/environ" in result.message


@needs("network namespace")
def test_a_loopback_server_gets_no_connection(server, settings):
    visible = judge(problem("scale_relu"), with_port("cheat_loopback", server.port), device="cpu", settings=settings)
    past_static = judged_past_static_checks("cheat_loopback", settings, with_port("cheat_loopback", server.port))
    hidden = judge(problem("scale_relu"), with_port("cheat_loopback_hidden", server.port), device="cpu",
                   settings=settings)
    for result in (visible, past_static, hidden):
        assert (result.status, result.reason) == ("rejected", "network_access"), result.message
    assert [g.source for g in past_static.guards if g.severity == "reject"] == ["dynamic"]
    assert server.accepted == 0


# (candidate, problem, status, reason) for the ported attacks, through the full judge.
PORTED = [
    ("cheat_ptrace", "rejected", "process_snooping"),
    ("cheat_self_mem", "rejected", "self_modification"),
    ("cheat_gc_expected", "rejected", "judge_patch"),
    ("cheat_frame_walk", "rejected", "judge_patch"),
    ("cheat_torch_replace", "rejected", "judge_patch"),
    ("cheat_nan_wildcard", "incorrect", "nan_inf"),
    ("cheat_warmup_detection", "incorrect", "value_mismatch"),
]


@pytest.mark.parametrize(("name", "status", "reason"), PORTED, ids=[p[0] for p in PORTED])
def test_ported_attack_is_stopped(name, status, reason, settings):
    result = judge(problem("scale_relu"), candidate(name), device="cpu", settings=settings)
    assert (result.status, result.reason) == (status, reason), result.message
    assert not result.correct and result.speedup is None


# Each of these also stopped when the static rules miss it, by what running shows.
PAST_STATIC = [
    ("cheat_ptrace", "process_snooping", "ptrace"),
    ("cheat_self_mem", "self_modification", "/proc/self/mem"),
    ("cheat_gc_expected", "judge_patch", "gc.get_objects"),
    ("cheat_frame_walk", "judge_patch", "tb_frame"),
    ("cheat_proc_environ_hidden", "process_snooping", "environ"),
]


@pytest.mark.parametrize(("name", "reason", "says"), PAST_STATIC, ids=[p[0] for p in PAST_STATIC])
def test_running_shows_what_syntax_missed(name, reason, says, settings):
    result = judged_past_static_checks(name, settings)
    assert (result.status, result.reason) == ("rejected", reason), result.message
    assert says in result.message
    assert all(g.source == "dynamic" for g in result.guards if g.severity == "reject")


NATIVE_SELF_MEM = """
import ctypes
import os

import torch.nn as nn

PATH = b"/proc/self/mem"


class ModelNew(nn.Module):
    \"\"\"Opens its own memory for writing through libc, which no audit hook sees: only the kernel can refuse.\"\"\"

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.open(PATH, os.O_RDWR)
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), PATH.decode())
        os.close(fd)
        return x.clamp_min(0) * self.scale
"""


@needs("landlock")
def test_the_kernel_refuses_a_write_to_the_workers_own_memory(settings):
    """Past the audit hook (native code), Landlock refuses the open; the wall's error names the attempt."""
    result = judged_past_static_checks("", settings, NATIVE_SELF_MEM)
    assert (result.status, result.reason) == ("rejected", "self_modification"), result.message
    assert "/proc/self/mem" in result.message


@needs("read-only judge files", "no capabilities")
@pytest.mark.parametrize("mode", ["fresh", "persistent"])
def test_a_module_planted_in_the_judges_cache_never_lands(mode, settings, tmp_path):
    """The extension cache is the judge's: read-only in the worker, which has no capability left to unmount or
    remount it, so no candidate can leave a module under a later candidate's key."""
    settings.harness.worker_mode = mode
    cache = tmp_path / "inline-cache"
    cache.mkdir()
    settings.compile.inline_cache_dir = cache
    source = candidate("cheat_plant_module").replace('TARGET = "cache"', f'TARGET = "{cache}"')
    result = judge(problem("scale_relu"), source, device="cpu", settings=settings)
    assert result.status == "ok", result.message  # honest arithmetic once its plant failed
    assert "'plant': 'Read-only file system'" in result.worker_output, result.worker_output
    assert "'umount': 'Operation not permitted'" in result.worker_output
    assert "'remount_rw': 'Operation not permitted'" in result.worker_output
    assert list(cache.iterdir()) == []


def test_the_judges_directories_are_listed_for_the_workers(settings, tmp_path):
    settings.harness.protected_dirs = [tmp_path / "suite"]
    paths = protected_paths(settings)
    for expected in (settings.runs_dir, settings.chat.dir, tmp_path / "suite", settings.memory.path,
                     settings.compile.cache_dir, settings.compile.inline_cache_dir):
        assert str(expected.expanduser().resolve()) in paths
    assert settings.compile.inline_cache_dir.is_dir()  # made first: an absent one could be planted in


@pytest.mark.parametrize("mode", ["fresh", "persistent"])
def test_a_worker_without_its_walls_refuses_to_judge_when_they_are_required(mode, settings):
    settings.harness.worker_mode = mode
    settings.harness.isolate = False
    settings.harness.require_isolation = True
    result = judge(problem("scale_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings)
    assert (result.status, result.reason) == ("runtime_error", "worker_error"), result.message
    assert "harness.require_isolation is set" in result.message and "harness.isolate is off" in result.message


def test_without_isolation_the_worker_says_so(settings):
    settings.harness.isolate = False
    result = judge(problem("scale_relu"), candidate("honest_scale_relu"), device="cpu", settings=settings)
    assert result.status == "ok", result.message
    assert result.details["isolation"] == {"applied": [], "missing": {"all": "harness.isolate is off"}}


UNDUMPABLE = """
import ctypes

from kernelpro.config import Settings
from kernelpro.harness.pipeline import Pipeline

prctl = ctypes.CDLL(None).prctl
before = prctl(3, 0, 0, 0, 0)  # PR_GET_DUMPABLE
with Pipeline("cpu", Settings()):
    print(before, prctl(3, 0, 0, 0, 0))
"""


def test_the_judge_is_undumpable_once_it_judges(tmp_path):
    """Its environment may hold a provider's key: no other process of its user may read it (a fresh judge
    process, since this one has already been made undumpable by the probe)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", UNDUMPABLE], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=session_home.environment(PYTHONPATH=str(root)))
    assert proc.stdout.split() == ["1", "0"], proc.stderr[-2000:]


def test_a_worker_is_one_thread_when_it_walls_itself_in():
    """unshare(CLONE_NEWUSER) refuses a process with a second thread (EINVAL), and numpy's or torch's import
    starts one: what the workers import before ``isolate`` (their entry modules and the walls' own) must leave
    them one thread, or no worker gets a user namespace and a machine that allows them reads as one that does not."""
    probe = ("import os, sys\n"
             "import kernelpro.harness.worker.persistent, kernelpro.harness.worker.process\n"
             "from kernelpro.harness.isolation import tripwires, walls, worker_walls\n"
             "print(len(os.listdir('/proc/self/task')), sorted({'numpy', 'torch'} & set(sys.modules)))\n")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert (found.returncode, found.stdout.strip()) == (0, "1 []"), found.stderr
