"""Real builds through torch's cpp_extension into the shared cache: published whole, built once across
processes, loaded by the worker's load_inline under the candidate's name, errors condensed to its lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelpro.harness.inline_build import worker_side
from kernelpro.harness.inline_build.build import BuildFailed, build_into_cache
from kernelpro.harness.inline_build.cache import InlineCache
from kernelpro.harness.inline_build.errors import condense_build_log
from kernelpro.harness.inline_build.spec import bind_arguments, spec_from_arguments, spec_key
from kernelpro.harness.inline_build.static import find_calls
from kernelpro.harness.worker.sandbox import worker_environment
from tests.inline.extensions import BROKEN_SOURCE, C_API_SOURCE, candidate


def _spec(source: str = C_API_SOURCE, name: str = "kp_twice"):
    return spec_from_arguments("inline", bind_arguments("inline", (), {
        "name": name, "cpp_sources": source, "no_implicit_headers": True}))


def test_a_build_is_published_whole_and_found_after(tmp_path, environment):
    cache, spec = InlineCache(tmp_path), _spec()
    key = spec_key(spec, environment)
    first = build_into_cache(spec, key, cache, "test")
    assert first["built"] and first["cpu_s"] > 0
    assert sorted(p.name for p in Path(first["entry"]).iterdir()) == ["entry.json", "kp_twice.so"]
    assert not any((tmp_path / ".staging").iterdir())  # nothing left of the build directory
    again = build_into_cache(spec, key, cache, "test")
    assert not again["built"] and again["first_built_by"] == "test"


def test_concurrent_builders_of_one_key_build_it_once(tmp_path, environment):
    """Two processes at once (the pool's builder entry point): one builds, the other waits and finds it."""
    spec = _spec(name="kp_twice_race")
    key = spec_key(spec, environment)
    jobs = []
    for i in range(2):
        job = {"spec": spec.model_dump(mode="json"), "key": key, "cache_root": str(tmp_path / "cache"),
               "arch_list": "9.0", "result_path": str(tmp_path / f"result{i}.json")}
        jobs.append(subprocess.Popen([sys.executable, "-m", "kernelpro.harness.inline_build.build"],
                                     stdin=subprocess.PIPE, cwd=tmp_path, env=worker_environment()))
        jobs[-1].stdin.write(json.dumps(job).encode())
        jobs[-1].stdin.close()
    assert [p.wait(timeout=120) for p in jobs] == [0, 0]
    outcomes = [json.loads((tmp_path / f"result{i}.json").read_text()) for i in range(2)]
    assert all(o["ok"] for o in outcomes) and sorted(o["built"] for o in outcomes) == [False, True]


def test_build_errors_point_at_the_candidates_lines(tmp_path, environment):
    source = candidate(BROKEN_SOURCE)
    [spec] = find_calls(source).specs
    with pytest.raises(BuildFailed) as failure:
        build_into_cache(spec, spec_key(spec, environment), InlineCache(tmp_path), "test")
    message = condense_build_log(failure.value.log, spec, source)
    wrong = next(n for n, line in enumerate(source.splitlines(), 1) if "PyNumber_Add(x, y)" in line)
    assert message.startswith(f"candidate.py:{wrong}:") and "y\u2019 was not declared" in message.replace("'", "\u2019")
    assert f"{wrong:>5} | " in message and len(message) < 600 and "ninja" not in message


def test_the_workers_load_inline_loads_from_the_cache_and_says_how(tmp_path, environment, monkeypatch):
    worker_side.install()
    from torch.utils import cpp_extension

    monkeypatch.chdir(tmp_path)
    spec = _spec(name="kp_twice_worker")
    key = spec_key(spec, environment)
    job = {"inline": {"cache_root": str(tmp_path / "cache"), "environment": environment, "ahead": {},
                      "why_not_ahead": "line 5: a value computed at run time"}}

    def call():
        return cpp_extension.load_inline(name="kp_twice_worker", cpp_sources=[C_API_SOURCE],
                                         no_implicit_headers=True, verbose=True)

    worker_side.begin_job(job)
    assert call().twice(21) == 42
    [built] = worker_side.records()
    assert built["path"] == "built_in_worker" and built["why"] == "line 5: a value computed at run time"
    worker_side.begin_job(job)
    assert call().twice("ab") == "abab"
    assert worker_side.records()[0]["path"] == "cache_hit"
    worker_side.begin_job({"inline": {**job["inline"], "ahead": {key: {"path": "built_ahead", "build_s": 1.0}}}})
    call()
    assert worker_side.records()[0]["path"] == "built_ahead"
    worker_side.begin_job({})  # no inline section: torch's own behaviour, nothing recorded
    assert call().twice(1) == 2 and worker_side.records() == []


def test_a_broken_leftover_entry_is_replaced_whole(tmp_path):
    cache = InlineCache(tmp_path)
    build_dir = cache.staging("k" * 64)
    (build_dir / "ext.so").write_bytes(b"new")
    leftover = cache.entry("k" * 64)
    leftover.mkdir(parents=True)
    (leftover / "ext.so").write_bytes(b"half-written")  # no entry.json: not an entry
    assert cache.lookup("k" * 64, "ext") is None
    entry = cache.publish("k" * 64, "ext", build_dir, {"build_s": 1.0})
    assert cache.lookup("k" * 64, "ext") == entry and (entry / "ext.so").read_bytes() == b"new"
    assert cache.record("k" * 64)["build_s"] == 1.0
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".")]


def test_a_build_failing_in_the_worker_is_a_condensed_compile_error(tmp_path, environment, monkeypatch):
    """A call the judge could not read, whose sources do not build: the import fails with the condensed log, and
    the loader makes it a compile error (not an import error with torch's whole ninja output)."""
    from kernelpro.harness.worker.loader import Verdict, load_candidate
    from tests.inline.extensions import runtime_candidate

    worker_side.install()
    monkeypatch.chdir(tmp_path)
    source = runtime_candidate().replace("PyNumber_Add(x, x)", "PyNumber_Add(x, y)")
    worker_side.begin_job({"candidate_source": source, "inline": {
        "cache_root": str(tmp_path / "cache"), "environment": environment, "ahead": {}, "why_not_ahead": ""}})
    with pytest.raises(Verdict) as failure:
        load_candidate(source, tmp_path)
    result = failure.value.result
    assert (result.status, result.reason) == ("compile_error", "kernel_compile_error")
    wrong = next(n for n, line in enumerate(C_API_SOURCE.splitlines(), 1) if "PyNumber_Add" in line)
    assert f"cpp_sources:{wrong}:" in result.message and "not declared" in result.message
    assert worker_side.records()[0]["path"] == "build_failed"
