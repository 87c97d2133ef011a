"""The on-disk compile cache: keys, hits without the compiler, atomic entries under concurrent writers."""

from __future__ import annotations

import multiprocessing

from kernelpro.harness.compile.cache import CompileCache, cache_key, compile_cached, request_key
from kernelpro.harness.compile.result import CompileRequest, CompileResult
from tests.compile import kernels
from tests.compile.conftest import TOOLS, needs_nvrtc


def test_key_covers_what_changes_the_binary_and_only_that():
    base = CompileRequest(source=kernels.ADD, arch="sm_90a", defines={"A": "1", "B": None})
    key = cache_key(base, "nvrtc 13.0")
    assert key == cache_key(base.model_copy(update={"defines": {"B": None, "A": "1"}}), "nvrtc 13.0")
    assert key == cache_key(base.model_copy(update={"name_expressions": []}), "nvrtc 13.0")
    changed = [
        base.model_copy(update={"source": kernels.ADD + " "}),
        base.model_copy(update={"backend": "nvcc"}),
        base.model_copy(update={"arch": "sm_100a"}),
        base.model_copy(update={"defines": {"A": "2", "B": None}}),
        base.model_copy(update={"extra_flags": ["-use_fast_math"]}),
        base.model_copy(update={"include_dirs": ["/x"]}),
        base.model_copy(update={"output": "ptx"}),
    ]
    assert len({key, *(cache_key(r, "nvrtc 13.0") for r in changed)}) == len(changed) + 1
    assert cache_key(base, "nvrtc 13.1") != key
    assert cache_key(base, "nvrtc 13.0", {"include_dirs": ["/y"]}) != key


def test_unset_arch_and_configured_arch_share_an_entry(compile_settings):
    _, implicit = request_key(CompileRequest(source=kernels.ADD), compile_settings, TOOLS)
    _, explicit = request_key(CompileRequest(source=kernels.ADD, arch="sm_90a"), compile_settings, TOOLS)
    assert implicit == explicit


@needs_nvrtc
def test_second_compile_is_answered_from_disk(compile_settings):
    cache = CompileCache(compile_settings.cache_dir)
    request = CompileRequest(source=kernels.ADD)
    first = compile_cached(request, compile_settings, cache)
    assert first.ok and not first.cached
    assert (cache.stats.hits, cache.stats.misses, cache.stats.stores) == (0, 1, 1)
    second = compile_cached(request, compile_settings, cache)
    assert (cache.stats.hits, cache.stats.misses, cache.stats.stores) == (1, 1, 1)  # no compile, no store
    assert second.cached and second.key == first.key and second.binary == first.binary
    assert second.elapsed_s == first.elapsed_s and second.resources == first.resources
    # Another process's cache object (here: a fresh one) sees the same entry.
    other = CompileCache(compile_settings.cache_dir)
    assert compile_cached(request, compile_settings, other).cached and other.stats.hits == 1


@needs_nvrtc
def test_failures_are_not_stored(compile_settings):
    cache = CompileCache(compile_settings.cache_dir)
    for _ in range(2):
        assert not compile_cached(CompileRequest(source=kernels.UNDEFINED), compile_settings, cache).ok
    assert cache.stats.stores == 0 and cache.stats.misses == 2


def test_damaged_entries_are_misses(tmp_path):
    cache = CompileCache(tmp_path)
    key = "ab" + "0" * 62
    cache.path(key).parent.mkdir(parents=True)
    cache.path(key).write_text("{not json")
    assert cache.get(key) is None
    result = CompileResult(ok=True, backend="nvrtc", binary=b"\x7fELF\x00\x01")
    assert cache.put(key, result)
    assert cache.get(key).binary == b"\x7fELF\x00\x01"
    assert cache.get("cd" + "0" * 62) is None  # an entry moved under another key is not trusted
    cache.path(key).rename(cache.path("ab" + "1" * 62))
    assert cache.get("ab" + "1" * 62) is None


def test_unwritable_cache_is_not_an_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert not CompileCache(blocker).put("ab" + "0" * 62, CompileResult(ok=True, backend="nvrtc"))


def _hammer(root: str, writer: int, rounds: int) -> int:
    """Write and read the same keys over and over; count reads that saw a partial or foreign entry."""
    cache = CompileCache(root)
    bad = 0
    for i in range(rounds):
        key = f"{i % 4:02d}" + "f" * 62
        payload = bytes([i % 4]) * (64 * 1024)  # large enough that a torn write would show
        cache.put(key, CompileResult(ok=True, backend="nvrtc", binary=payload, log=f"writer {writer}"))
        got = cache.get(key)
        if got is None or got.binary != payload:
            bad += 1
    return bad


def test_concurrent_writers_never_expose_a_partial_entry(tmp_path):
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        bad = pool.starmap(_hammer, [(str(tmp_path), 0, 300), (str(tmp_path), 1, 300)])
    assert bad == [0, 0]
    assert not list(tmp_path.rglob("*.tmp"))
    assert len(list(tmp_path.rglob("*.json"))) == 4
