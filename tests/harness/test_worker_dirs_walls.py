"""What a worker writes, on the real kernel: its own directory, with its compile caches and temporary directory
in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpro.harness.judge import judge
from kernelpro.harness.sandbox import worker_environment
from kernelpro.harness.worker_dirs import PRIVATE_DIRS, worker_root
from tests.conftest import problem

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


@pytest.mark.parametrize("mode", ["fresh", "persistent"])
def test_torch_compile_builds_into_the_workers_own_cache(mode, settings, monkeypatch, tmp_path):
    """Inductor's C++ build on the CPU lands in the worker's own directory: not in the caller's cache, nor in its
    default under the caller's temporary directory."""
    settings.harness.worker_mode = mode
    settings.harness.timeout_s = 240  # a cold Inductor cache compiles C++
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    # The caller's temporary directory, and so Inductor's default under it, the test's own: /tmp's is shared with
    # whatever else runs here.
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    result = judge(problem("scale_relu"), COMPILED, device="cpu", settings=settings)
    assert (result.status, result.correct) == ("ok", True), result.message
    line = next(line for line in result.worker_output.splitlines() if line.startswith("inductor cache: "))
    cache, rest = line.removeprefix("inductor cache: ").split(" (", 1)
    files, cwd = int(rest.split()[0]), rest.split("working directory: ")[1]
    own = Path(cwd).relative_to(worker_root()).parts[0]  # the worker's own directory
    assert Path(cache).relative_to(worker_root()).parts[0] == own and files > 0, line
    assert not list((tmp_path / "inductor").glob("*"))
    assert not list((tmp_path / "tmp").rglob("*"))
