"""The judge's side of ``load_inline`` candidates: what to build ahead, the build pool, each job's ``inline``.

For every candidate that mentions ``torch.utils.cpp_extension``, ``static.find_calls`` reads its calls; those
that resolve are built in the pool (``inline_build.pool``) while the GPU judges other candidates, and the job
tells the worker where the cache is, which keys were built ahead, and why any other call is built there.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelpro.config import CompileSettings
from kernelpro.harness.inline_build.errors import condense_build_log
from kernelpro.harness.inline_build.pool import AheadBuild, InlineBuildPool
from kernelpro.harness.inline_build.spec import InlineSpec, arch_list_for, build_environment, spec_key
from kernelpro.harness.inline_build.static import UnresolvedCall, find_calls

MARKERS = ("cpp_extension", "load_inline")


def mentions_extensions(source: str) -> bool:
    return any(marker in source for marker in MARKERS)


@dataclass
class InlinePlan:
    """One candidate's calls: those the pool builds (with their keys), and those left to the worker."""

    builds: list[tuple[InlineSpec, str]] = field(default_factory=list)
    unresolved: list[UnresolvedCall] = field(default_factory=list)
    futures: list[Future[AheadBuild]] = field(default_factory=list)


@dataclass
class InlineCounts:
    """What the pool did across batches: builds made, found in the cache, failed; compiler CPU seconds."""

    built: int = 0
    cached: int = 0
    failed: int = 0
    cpu_s: float = 0.0
    build_s: float = 0.0


class InlineAhead:
    """Plans, builds and describes ``load_inline`` work for one pipeline."""

    def __init__(self, settings: CompileSettings) -> None:
        self.settings = settings
        self._scratch: str | None = None
        self._pool: InlineBuildPool | None = None
        self.counts = InlineCounts()
        self._counted: set[str] = set()

    @functools.cached_property
    def arch_list(self) -> str:
        from kernelpro.harness.compile.toolchain import default_arch

        return arch_list_for(self.settings.arch or default_arch(arch_specific=False))

    @functools.cached_property
    def environment(self) -> dict[str, str]:
        return build_environment(self.arch_list, self.settings.inline_lean_headers)

    @property
    def cache_root(self) -> Path | None:
        """The shared cache; with it off but ahead-building on, a directory for this pipeline alone."""
        if self.settings.inline_cache:
            return self.settings.inline_cache_dir.expanduser()
        if self.settings.inline_ahead:
            self._scratch = self._scratch or tempfile.mkdtemp(prefix="kernelpro-inline-cache-")
            return Path(self._scratch)
        return None

    @property
    def width(self) -> int:
        return self._pool.width if self._pool else 0

    def plan(self, source: str) -> InlinePlan | None:
        """The candidate's calls, their builds submitted to the pool; None for a candidate without any."""
        if not mentions_extensions(source):
            return None
        found = find_calls(source)
        plan = InlinePlan(unresolved=found.unresolved)
        if self.settings.inline_ahead:
            plan.builds = [(spec, spec_key(spec, self.environment)) for spec in found.specs]
            if plan.builds and self._pool is None:
                self._pool = InlineBuildPool(self.settings, self.cache_root, self.arch_list)
            plan.futures = [self._pool.submit(spec, key) for spec, key in plan.builds] if self._pool else []
        return plan

    def settle(self, plan: InlinePlan, source: str) -> tuple[str | None, dict[str, Any]]:
        """After the plan's builds finish: a compile error's condensed message (the verdict, no worker needed),
        or None, and the job's ``inline`` section."""
        builds = [future.result() for future in plan.futures]
        self.count(builds)
        broken = next((b for b in builds if b.failure == "compile"), None)
        if broken is not None:
            where = f" (line {broken.spec.line})" if broken.spec.line else ""
            return (f"extension {broken.spec.name!r}{where} does not build:\n"
                    + condense_build_log(broken.log, broken.spec, source)), {}
        return None, self.section(plan, builds)

    def section(self, plan: InlinePlan, builds: list[AheadBuild]) -> dict[str, Any]:
        ahead: dict[str, dict[str, Any]] = {}
        troubles: list[str] = []
        for build in builds:
            if not build.ok:
                troubles.append(f"the pool's build of {build.spec.name!r} failed ({build.failure}): {build.log[:300]}")
            elif build.built:
                ahead[build.key] = {"path": "built_ahead", "build_s": round(build.build_s, 3),
                                    "cpu_s": round(build.cpu_s, 3), "lean_headers": build.lean_headers}
            else:
                ahead[build.key] = {"path": "cache_hit"}
        if not self.settings.inline_ahead:
            troubles.append("ahead-building is off (compile.inline_ahead)")
        troubles += [f"line {u.line}: {u.reason}" for u in plan.unresolved]
        root = self.cache_root
        return {"cache_root": str(root) if root else None, "environment": self.environment, "ahead": ahead,
                "why_not_ahead": "; ".join(troubles)}

    def count(self, builds: list[AheadBuild]) -> None:
        """Add each key's build once, however many candidates share it."""
        for build in builds:
            if build.key in self._counted:
                continue
            self._counted.add(build.key)
            self.counts.built += build.ok and build.built
            self.counts.cached += build.ok and not build.built
            self.counts.failed += not build.ok
            self.counts.cpu_s += build.cpu_s
            self.counts.build_s += build.build_s if build.built else 0.0

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
