"""What ``torch.utils.cpp_extension.load_inline`` and ``load`` become inside a worker.

A call is normalised and keyed the way the judge keyed it; the module then comes from the cache (built ahead
in the pool, or by an earlier run), loaded under the candidate's own name with the functions it asked for.
A call the cache has no entry for is built here, with torch's own code, into the job's own directory: the
shared cache is written by the judge's build pool alone (it is read-only inside workers). ``verbose`` and
``build_directory`` are the judge's business: builds are quiet. Each call's path (``built_ahead``,
``cache_hit``, ``built_in_worker`` and why) is recorded for the verdict's ``details.load_inline``.

With the cache off the calls pass straight through to torch (only recorded), which is the serial path.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelpro.harness.inline_build.build import BuildFailed, build_into_cache
from kernelpro.harness.inline_build.cache import InlineCache
from kernelpro.harness.inline_build.errors import condense_build_log
from kernelpro.harness.inline_build.spec import Unsupported, bind_arguments, spec_from_arguments, spec_key


class ExtensionBuildError(RuntimeError):
    """A ``load_inline``/``load`` build that failed in the worker; the message is the condensed log. A
    ``RuntimeError``, as torch's own, so a candidate's handler behaves as it would without the judge."""


@dataclass
class JobContext:
    """One job's view of the cache, set by ``begin_job``."""

    cache: InlineCache | None
    environment: dict[str, str]
    ahead: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Keys the judge built (or found) ahead for this candidate, with how."""
    why_not_ahead: str = ""
    candidate_source: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)


_context: list[JobContext] = []  # at most one: the job being judged


def begin_job(job: dict[str, Any]) -> None:
    """Take the job's ``inline`` section (``pipeline`` fills it); a job without one passes calls through."""
    _context.clear()
    inline = job.get("inline")
    if inline is None:
        return
    cache = InlineCache(inline["cache_root"]) if inline.get("cache_root") else None
    _context.append(JobContext(cache=cache, environment=inline["environment"], ahead=inline.get("ahead", {}),
                               why_not_ahead=inline.get("why_not_ahead", ""),
                               candidate_source=job.get("candidate_source")))


def records() -> list[dict[str, Any]]:
    """How each of this job's calls was satisfied, in call order."""
    return list(_context[0].records) if _context else []


def install() -> None:
    """Put the cache-aware ``load_inline`` and ``load`` in torch's module (once per process)."""
    from torch.utils import cpp_extension

    for name, kind in (("load_inline", "inline"), ("load", "load")):
        real = getattr(cpp_extension, name)
        if getattr(real, "__kernelpro_kind__", None) is None:
            setattr(cpp_extension, name, _wrap(real, kind))


def _wrap(real: Any, kind: str) -> Any:
    @functools.wraps(real)
    def load(*args: Any, **kwargs: Any) -> Any:
        return _resolve(kind, real, args, kwargs)

    load.__kernelpro_kind__ = kind  # type: ignore[attr-defined]
    return load


def _resolve(kind: str, real: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    context = _context[0] if _context else None
    if context is None:
        return real(*args, **kwargs)
    started = time.monotonic()
    record: dict[str, Any] = {"call": "load_inline" if kind == "inline" else "load"}
    context.records.append(record)
    try:
        spec = spec_from_arguments(kind, bind_arguments(kind, args, kwargs), Path.cwd())
    except Unsupported as exc:
        record.update(path="built_in_worker", why=f"not cacheable: {exc}")
        return _timed(record, started, lambda: real(*args, **kwargs))
    except TypeError:
        return real(*args, **kwargs)  # torch raises its own error for arguments it refuses
    record["name"] = spec.name
    if context.cache is None:
        record.update(path="built_in_worker", why=context.why_not_ahead or "the extension cache is off")
        return _timed(record, started, lambda: real(*args, **kwargs))
    key = spec_key(spec, context.environment)
    record["key"] = key[:16]
    # The shared cache is the judge's and read-only here: a build of the worker's own goes to the job's
    # directory and is never published, so no candidate can leave a module under another candidate's key.
    cache = context.cache if context.cache.lookup(key, spec.name) is not None else InlineCache(_private_root())
    try:
        outcome = build_into_cache(spec, key, cache, "worker", context.environment.get("lean_headers") == "1")
    except BuildFailed as failure:
        record.update(path="build_failed", seconds=round(time.monotonic() - started, 3))
        raise ExtensionBuildError(f"extension {spec.name!r} does not build:\n"
                                  + condense_build_log(failure.log, spec, context.candidate_source)) from None
    if outcome["built"]:
        why = context.why_not_ahead or ("its arguments at run time differ from those read in its source"
                                        if context.ahead else "its arguments are only known at run time")
        record.update(path="built_in_worker", why=why, build_s=outcome["build_s"], cpu_s=outcome["cpu_s"],
                      lean_headers=outcome["lean_headers"])
    elif key in context.ahead:
        record.update(context.ahead[key])
    else:
        record.update(path="cache_hit", first_built_by=outcome.get("first_built_by"))
    from torch.utils import cpp_extension

    return _timed(record, started, lambda: cpp_extension._import_module_from_library(spec.name, outcome["entry"], True))


def _private_root() -> Path:
    """This job's own build directory (``TORCH_EXTENSIONS_DIR``, under the job's working directory)."""
    import os

    return Path(os.environ.get("TORCH_EXTENSIONS_DIR") or Path.cwd() / "torch_extensions") / "kernelpro-inline"


def _timed(record: dict[str, Any], started: float, load: Any) -> Any:
    try:
        return load()
    finally:
        record["seconds"] = round(time.monotonic() - started, 3)
