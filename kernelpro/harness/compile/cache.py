"""A content-addressed cache of compile results on disk, shared by processes and across runs.

The key is a SHA-256 over everything that changes the binary: the backend, the source, the options
(defines and name expressions sorted; include directories and extra flags keep their order, which matters
to the compiler), the target and the compiler's version. Headers found through include directories are not
hashed: the toolkit's are covered by its version, CUTLASS's by the wheel's.

Entries are JSON (the binary in base64), never pickle, so reading one cannot run code. Each is written to a
temporary file in the same folder and moved into place with ``os.replace``: readers see a whole entry or
none, and concurrent writers of one key simply replace each other's identical bytes. Only successful
compiles are stored.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from kernelpro.atomic_write import write_atomic
from kernelpro.config import CompileSettings
from kernelpro.harness.compile.dispatch import compile_source
from kernelpro.harness.compile.result import CompileRequest, CompileResult
from kernelpro.harness.compile.toolchain import Toolchain, detect, resolve_arch

CACHE_FORMAT = 1


def cache_key(request: CompileRequest, toolchain_tag: str, extra: dict[str, object] | None = None) -> str:
    """SHA-256 of the request (with its target resolved), the compiler's identity and ``extra``."""
    fields = request.model_dump(mode="json")
    fields["name_expressions"] = sorted(fields["name_expressions"])
    payload = {"format": CACHE_FORMAT, "toolchain": toolchain_tag, "request": fields, "extra": extra or {}}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass
class CacheStats:
    """What this process's cache object did: lookups answered, lookups missed, entries written."""

    hits: int = 0
    misses: int = 0
    stores: int = 0


class CompileCache:
    """Compile results on disk under ``root``, one JSON file per key."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser()
        self.stats = CacheStats()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CompileResult | None:
        """The stored result for ``key`` (marked ``cached``), or None; an unreadable entry is a miss."""
        try:
            payload = json.loads(self.path(key).read_text())
            binary = base64.b64decode(payload.pop("binary_b64"))
            result = CompileResult.model_validate({**payload, "binary": binary})
        except (OSError, ValueError, KeyError, TypeError, ValidationError):
            self.stats.misses += 1
            return None
        if result.key != key or not result.ok:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        return result.model_copy(update={"cached": True})

    def put(self, key: str, result: CompileResult) -> bool:
        """Store ``result`` atomically. A cache that cannot be written is not an error: returns False."""
        target = self.path(key)
        payload = result.model_dump(mode="json", exclude={"cached"})
        payload["key"] = key
        payload["binary_b64"] = base64.b64encode(result.binary).decode()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, json.dumps(payload))
        except OSError:
            return False
        self.stats.stores += 1
        return True


def request_key(request: CompileRequest, settings: CompileSettings, toolchain: Toolchain) -> tuple[CompileRequest,
                                                                                                   str]:
    """The request with its target resolved, and its cache key."""
    request = request.model_copy(update={"arch": resolve_arch(request.arch, settings)})
    extra: dict[str, object] = {"include_dirs": [str(d) for d in settings.include_dirs]}
    if request.backend == "nvcc":
        extra["cutlass"] = toolchain.cutlass_version if toolchain.cutlass_include else None
    return request, cache_key(request, toolchain.tag(request.backend), extra)


def compile_cached(request: CompileRequest, settings: CompileSettings | None = None,
                   cache: CompileCache | None = None, toolchain: Toolchain | None = None) -> CompileResult:
    """The cached result for ``request`` if there is one, else compile it (and store it if it compiled)."""
    settings = settings or CompileSettings()
    toolchain = toolchain or detect(settings)
    cache = cache or CompileCache(settings.cache_dir)
    request, key = request_key(request, settings, toolchain)
    hit = cache.get(key)
    if hit is not None:
        return hit
    result = compile_source(request, settings, toolchain)
    result.key = key
    if result.ok:
        cache.put(key, result)
    return result
