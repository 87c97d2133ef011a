"""Extension builds in parallel on the judge's CPUs, ahead of the GPU queue.

Each build runs in a process of its own (``python -m kernelpro.harness.inline_build.build``, the worker's
credential-free environment, a session of its own), from a pool of threads ``compile.inline_workers`` wide: a
compiler that crashes is that build's outcome, one that hangs is killed with its whole process group at
``compile.inline_timeout_s``. Builds of one key are made once per pool, and once across processes (the
cache's lock).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kernelpro.config import CompileSettings
from kernelpro.harness.inline_build.spec import InlineSpec
from kernelpro.harness.worker.sandbox import worker_environment


@dataclass
class AheadBuild:
    """One key's build in the pool: built now, found in the cache, or failed (and how)."""

    key: str
    spec: InlineSpec
    ok: bool
    built: bool = False
    failure: Literal["compile", "timeout", "crash", "internal"] | None = None
    log: str = ""
    build_s: float = 0.0
    """The build's own wall time (0 for a cache hit)."""
    cpu_s: float = 0.0
    """CPU time of the compilers it ran."""
    lean_headers: bool = False
    """The CUDA source was built on torch/types.h (``build.lean_variant``)."""


class InlineBuildPool:
    """Builds specs into the cache at ``cache_root``; ``submit`` returns at once."""

    def __init__(self, settings: CompileSettings, cache_root: Path, arch_list: str) -> None:
        self.settings, self.cache_root, self.arch_list = settings, cache_root, arch_list
        self.width = max(1, settings.inline_workers or os.cpu_count() or 1)
        self.executor = ThreadPoolExecutor(max_workers=self.width, thread_name_prefix="kernelpro-inline-build")
        self.futures: dict[str, Future[AheadBuild]] = {}

    def submit(self, spec: InlineSpec, key: str) -> Future[AheadBuild]:
        if key not in self.futures:
            self.futures[key] = self.executor.submit(self._build, spec, key)
        return self.futures[key]

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)

    def _build(self, spec: InlineSpec, key: str) -> AheadBuild:
        with tempfile.TemporaryDirectory(prefix="kernelpro-inline-") as scratch:
            result_path = Path(scratch) / "result.json"
            job = {"spec": spec.model_dump(mode="json"), "key": key, "cache_root": str(self.cache_root),
                   "arch_list": self.arch_list, "result_path": str(result_path),
                   "lean_headers": self.settings.inline_lean_headers}
            started = time.monotonic()
            process = subprocess.Popen([sys.executable, "-m", "kernelpro.harness.inline_build.build"],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       cwd=scratch, env=worker_environment(), start_new_session=True)
            try:
                output, _ = process.communicate(json.dumps(job).encode(), timeout=self.settings.inline_timeout_s)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                return AheadBuild(key, spec, ok=False, failure="timeout", build_s=time.monotonic() - started,
                                  log=f"the build did not finish within {self.settings.inline_timeout_s:g} s")
            try:
                outcome = json.loads(result_path.read_text())
            except (OSError, ValueError):
                tail = output.decode(errors="replace")[-2000:]
                return AheadBuild(key, spec, ok=False, failure="crash", build_s=time.monotonic() - started,
                                  log=f"the builder exited with code {process.returncode} without a result: {tail}")
        if not outcome["ok"]:
            return AheadBuild(key, spec, ok=False, failure=outcome["failure"], log=outcome["log"],
                              build_s=time.monotonic() - started)
        return AheadBuild(key, spec, ok=True, built=outcome["built"], build_s=outcome.get("build_s") or 0.0,
                          cpu_s=outcome.get("cpu_s") or 0.0, lean_headers=bool(outcome.get("lean_headers")))


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
