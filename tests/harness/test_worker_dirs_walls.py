"""What a worker may write, on the real kernel: its own directory, with its compile caches and temporary
directory in it, and nothing that a later program starts from (the Python installation, HOME, the caller's
compile caches, another worker's directory)."""

from __future__ import annotations

import getpass
import secrets
import site
import sys
import tempfile
from pathlib import Path

import pytest

from kernelpro.harness.isolation.probe import isolation_checks
from kernelpro.harness.isolation.worker_walls import OWN_ROOT
from kernelpro.harness.jobs import protected_paths
from kernelpro.harness.judge import judge
from kernelpro.harness.worker.dirs import PRIVATE_DIRS, worker_root
from kernelpro.harness.worker.sandbox import PACKAGE_ROOT, worker_environment
from tests.conftest import candidate, problem
from tests.harness.test_sandbox_walls import judged_past_static_checks, needs

REFUSED = "Read-only file system"
# A directory that is absent from the worker's own root cannot be made there either: Landlock refuses it.
REFUSED_HERE = ("Read-only file system", "Permission denied")

# Not under tests/data/candidates: a cold compile takes 15 s on two cores, past the every-candidate batch's limit.
COMPILED = """
import os

import torch
import torch.nn as nn
from torch._inductor.runtime.cache_dir_utils import cache_dir


class ModelNew(nn.Module):
    \"\"\"torch.compile on the CPU: Inductor writes its generated C++ and the library built from it to its cache.\"\"\"

    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.fused = torch.compile(self.scaled_relu)
        self.reported = False

    def scaled_relu(self, x):
        return torch.relu(x) * self.scale

    def forward(self, x):
        out = self.fused(x)
        if not self.reported:  # where the compile went, for the test
            self.reported = True
            files = sum(len(names) for _, _, names in os.walk(cache_dir()))
            print(f"inductor cache: {cache_dir()} ({files} files), working directory: {os.getcwd()}")
        return out
"""


def planting(targets: list[str]) -> str:
    source = candidate("cheat_plant_startup_file")
    assert "TARGETS = []" in source
    return source.replace("TARGETS = []", f"TARGETS = {targets!r}")


def test_each_worker_gets_its_caches_and_temporary_directory_in_its_own_directory(tmp_path):
    caller = {"PATH": "/usr/bin", "TORCHINDUCTOR_CACHE_DIR": "/caller/inductor", "TRITON_CACHE_DIR": "/caller/triton",
              "CUDA_CACHE_PATH": "/caller/nv", "XDG_CACHE_HOME": "/caller/cache", "TMPDIR": "/caller/tmp",
              "TORCHINDUCTOR_COMPILE_THREADS": "4"}
    env = worker_environment(caller, workdir=str(tmp_path))
    for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TRITON_HOME", "CUDA_CACHE_PATH", "CUPY_CACHE_DIR",
                 "XDG_CACHE_HOME", "MPLCONFIGDIR", "TMPDIR"):
        assert name in PRIVATE_DIRS
        assert Path(env[name]).is_relative_to(tmp_path) and Path(env[name]).is_dir(), name
    assert len({env[name] for name in PRIVATE_DIRS}) == len(PRIVATE_DIRS)  # no two share a directory
    assert env["TORCHINDUCTOR_COMPILE_THREADS"] == "4" and env["PATH"] == "/usr/bin"
    assert worker_environment(caller)["TORCHINDUCTOR_CACHE_DIR"] == "/caller/inductor"  # no worker: as it was


def test_what_the_next_program_starts_from_is_listed_for_the_workers(settings, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    paths = protected_paths(settings)
    for expected in (sys.prefix, sys.base_prefix, *site.getsitepackages(), site.getusersitepackages(), PACKAGE_ROOT,
                     tmp_path / "home", tmp_path / "triton", worker_root(),
                     Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}"):
        assert str(Path(expected).resolve()) in paths, expected
    assert (tmp_path / "triton").is_dir()  # made first: an absent one could be planted in


@needs("read-only judge files", "no capabilities")
@pytest.mark.parametrize("mode", ["fresh", "persistent"])
def test_nothing_lands_where_a_later_program_would_run_it(mode, settings, monkeypatch, tmp_path):
    """Past the static checks: a .pth in the real site-packages (the next Python runs it, the kernelpro CLI with its
    key included), a line in HOME's shell start-up, a module in the judge's own Inductor cache."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # a HOME of the test's own: a failure can never touch the real one
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    targets = [str(Path(site.getsitepackages()[0]) / f"kernelpro-planted-{secrets.token_hex(4)}.pth"),
               str(home / ".bashrc"), str(home / ".config" / "autostart" / "planted.desktop"),
               str(tmp_path / "inductor" / "fxgraph" / "planted.py")]
    try:
        result = judged_past_static_checks("", settings, planting(targets), mode=mode)
        assert result.status == "ok", result.message  # honest arithmetic once its plants failed
        for target in targets:
            assert any(f"'{target}': '{why}'" in result.worker_output for why in REFUSED_HERE), result.worker_output
            assert not Path(target).exists()
    finally:
        Path(targets[0]).unlink(missing_ok=True)


@needs("read-only judge files")
def test_the_doctor_lists_the_directories_a_worker_has_read_only(settings, monkeypatch, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    files = next(check for check in isolation_checks(protected_paths(settings)) if check.name == "sandbox files")
    assert files.ok and "writable" not in files.detail, files.detail
    for expected in (home, Path(site.getsitepackages()[0]), PACKAGE_ROOT, worker_root()):
        assert str(expected.resolve()) in files.detail, files.detail


@needs("read-only judge files", "no capabilities")
@pytest.mark.parametrize("mode", ["fresh", "persistent"])
def test_a_home_that_holds_the_workers_directory_is_read_only_but_for_it(mode, settings, monkeypatch):
    """HOME holding the temporary directory (every worker's own directory is made there): the worker's own stays
    writable, everything else under HOME does not, by absolute path or relative to the working directory."""
    holder = worker_root().parent
    monkeypatch.setenv("HOME", str(holder))
    token = secrets.token_hex(4)
    up = "../" * (2 if mode == "fresh" else 3)  # a long-lived worker's job has a directory inside the worker's
    targets = [str(holder / f"kernelpro-planted-{token}"), f"{up}kernelpro-planted-{token}-relative", "own/scratch"]
    try:
        result = judged_past_static_checks("", settings, planting(targets), mode=mode)
        assert result.status == "ok", result.message
        applied = result.details["isolation"]["applied"]  # a root of its own, or HOME read-only in place
        assert OWN_ROOT in applied or f"read-only {holder} but for the worker's own directory" in applied, applied
        for target in targets[:2]:
            assert any(f"'{target}': '{why}'" in result.worker_output for why in REFUSED_HERE), result.worker_output
        assert "'own/scratch': 'ok'" in result.worker_output
        assert not list(holder.glob(f"kernelpro-planted-{token}*"))
    finally:
        for planted in holder.glob(f"kernelpro-planted-{token}*"):
            planted.unlink()


WRITES_INDUCTORS_CACHE = COMPILED.replace("self.fused = torch.compile(self.scaled_relu)", "self.fused = self.written")\
    .replace("    def forward(self, x):", """    def written(self, x):  # a build's file where Inductor puts one
        os.makedirs(cache_dir(), exist_ok=True)
        with open(os.path.join(cache_dir(), "built"), "w") as handle:
            handle.write("1")
        return self.scaled_relu(x)

    def forward(self, x):""")


# One real Inductor build (a cold C++ compile: about a minute on two busy cores); the fresh worker's start differs
# from the long-lived one's, not the build, so there the candidate writes where Inductor would.
@pytest.mark.parametrize("mode,source", [("fresh", WRITES_INDUCTORS_CACHE), ("persistent", COMPILED)],
                         ids=["fresh", "persistent"])
def test_torch_compile_builds_into_the_workers_own_cache(mode, source, settings, monkeypatch, tmp_path):
    """Inductor's C++ build on the CPU lands in the worker's own directory: not in the caller's cache (read-only
    there), nor in its default under the caller's temporary directory."""
    settings.harness.worker_mode = mode
    settings.harness.timeout_s = 240  # a cold Inductor cache compiles C++
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    # The caller's temporary directory, and so Inductor's default under it, the test's own: /tmp's is shared with
    # whatever else runs here.
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    result = judge(problem("scale_relu"), source, device="cpu", settings=settings)
    assert (result.status, result.correct) == ("ok", True), result.message
    line = next(line for line in result.worker_output.splitlines() if line.startswith("inductor cache: "))
    cache, rest = line.removeprefix("inductor cache: ").split(" (", 1)
    files, cwd = int(rest.split()[0]), rest.split("working directory: ")[1]
    own = Path(cwd).relative_to(worker_root()).parts[0]  # the worker's own directory
    assert Path(cache).relative_to(worker_root()).parts[0] == own and files > 0, line
    assert not list((tmp_path / "inductor").glob("*"))
    assert not list((tmp_path / "tmp").rglob("*"))
