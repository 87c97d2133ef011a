"""Shared fixtures: the problems and candidates under tests/data, and settings sized for a quick suite."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from tests.support import session_home

# Before kernelpro is imported (it reads HOME at import) and before any test starts a process (each inherits it):
# HOME, the XDG directories and kernelpro's data paths (judged dataset, memory, caches, runs, chats) in a
# directory of this session, never the developer's.
SESSION = session_home.enter()
# The referee adds three processes to every correct verdict (a few seconds each on two cores): the tests that judge
# for other reasons do without it, in this process and every one it starts. Its own tests, the verdict table of
# every candidate and the CLI's referee test turn it on.
os.environ.setdefault("KERNELPRO_HARNESS__REFEREE", "false")

from kernelpro.config import Settings  # noqa: E402
from kernelpro.problem import Problem, load_problem  # noqa: E402

DATA = Path(__file__).parent / "data"


def problem(name: str) -> Problem:
    return load_problem(DATA / "problems" / f"{name}.py")


def candidate(name: str) -> str:
    return (DATA / "candidates" / f"{name}.py").read_bytes().decode("utf-8", errors="replace")


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    """Defaults, with timing cut short: these tests judge verdicts, not speed."""
    monkeypatch.chdir(tmp_path)  # no kernelpro.toml of the developer's leaks in
    s = Settings()
    s.harness.timing_budget_s = 0.5
    s.harness.timing_trials = 10
    s.harness.min_timing_trials = 5
    # No second opinion on a best unless a test asks for one: on two busy cores, two processes timed seconds
    # apart read different figures. Its own tests turn it on, with these short budgets.
    s.harness.second_opinion = False
    s.harness.second_opinion_budget_s = 0.3
    s.harness.second_opinion_rounds = 40
    s.harness.timeout_s = 60
    # The suite runs beside other work; tests of the contention mark set their own threshold.
    s.harness.cpu_contention_cores = 1e9
    s.harness.timeout_floor_s = 60  # a slow fault (a memory bomb on a busy host) keeps its own verdict
    # Where a test turns the referee on: two busy cores wake its processes milliseconds late at times; the liars
    # its tests catch under-report by far more than this.
    s.harness.referee_timer_floor_ms = 1.0
    s.compile.inline_cache_dir = tmp_path / "inline-cache"  # every test builds its load_inline extensions anew
    # A lock directory of its own: the machine-wide one made the GPU tests of parallel workers wait for each
    # other's every judgment (66 of 95 ended in 420 s on an H200 at 6 workers); the lock's tests set theirs.
    s.harness.device_lock_dir = tmp_path / "device-locks"
    return s


@pytest.fixture(autouse=True)
def _fresh_tool_calling_probes():
    """Probe verdicts last a process; each test's loopback server is a new one (its port may be an old one's)."""
    from kernelpro.llm import probe as llm_probe

    llm_probe._PROBED.clear()
    yield
    llm_probe._PROBED.clear()


@pytest.fixture(autouse=True)
def _gpu_turn(request, tmp_path_factory):
    """GPU tests of parallel workers share the card, but those marked ``gpu_exclusive`` (they read the clock or
    the power counter themselves) hold it alone: another process's kernels time-slice with theirs, and a 20 ms
    sleep then read as work left on another stream (on an H200 at 8 workers). A turnstile keeps a waiting
    exclusive test from starving behind a stream of shared ones."""
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    shared_dir = tmp_path_factory.getbasetemp().parent  # one directory for every worker of this session
    exclusive = request.node.get_closest_marker("gpu_exclusive") is not None
    with open(shared_dir / "gpu-turnstile.lock", "a") as turnstile, open(shared_dir / "gpu-share.lock", "a") as share:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(share, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield


def pytest_sessionfinish(session, exitstatus):
    if SESSION.owner:  # the workers of this session share its directory; the process that made it removes it
        shutil.rmtree(SESSION.root, ignore_errors=True)
