"""load_inline candidates through the whole judging pipeline on the CPU: built ahead in the pool, shared by
candidates with the same extension, built in the worker when the source does not say what to build, refused
without a worker when they do not compile; a second batch builds nothing."""

from __future__ import annotations

import pytest

from kernelpro.graphs.views import describe_result
from kernelpro.harness.pipeline import Pipeline
from kernelpro.problem import parse_problem
from tests.inline.extensions import BROKEN_SOURCE, PROBLEM, candidate, runtime_candidate


@pytest.fixture
def inline_settings(settings, tmp_path):
    settings.compile.inline_cache_dir = tmp_path / "inline-cache"
    settings.compile.inline_workers = 2
    settings.harness.timeout_s = 120
    return settings


def test_a_batch_is_built_ahead_then_found_in_the_cache(inline_settings):
    problem = parse_problem(PROBLEM, "twice")
    batch = [(problem, candidate()), (problem, candidate(marker="same extension, other file")),
             (problem, runtime_candidate()), (problem, candidate(BROKEN_SOURCE, name="kp_broken"))]
    with Pipeline("cpu", inline_settings) as pipeline:
        ahead, shared, runtime, broken = pipeline.judge(batch, timing=False)
        first = pipeline.stats
    assert [r.status for r in (ahead, shared, runtime)] == ["ok"] * 3, [r.message for r in (ahead, shared, runtime)]
    assert ahead.details["load_inline"][0]["path"] == "built_ahead"
    assert shared.details["load_inline"][0]["path"] == "built_ahead"  # one build for both
    [in_worker] = runtime.details["load_inline"]
    call_line = next(n for n, line in enumerate(runtime_candidate().splitlines(), 1) if "load_inline(" in line)
    assert in_worker["path"] == "built_in_worker" and f"line {call_line}: a value computed" in in_worker["why"]
    assert (broken.status, broken.reason) == ("compile_error", "kernel_compile_error")
    assert "candidate.py:" in broken.message and "kp_broken" in broken.message
    # the one line a progress line and a report show names the compiler's complaint, not just "does not build:"
    assert "does not build:" in describe_result(broken) and "error" in describe_result(broken).split("build:")[1]
    assert broken.elapsed_s is None  # no worker ran
    assert (first.inline.built, first.inline.failed, first.inline_pool_width) == (1, 1, 2)

    with Pipeline("cpu", inline_settings) as pipeline:
        again = pipeline.judge(batch[:3], timing=False)
        second = pipeline.stats
    # the worker's own build was never published: the shared cache is the judge's, read-only in workers
    assert [r.details["load_inline"][0]["path"] for r in again] == ["cache_hit", "cache_hit", "built_in_worker"]
    assert (second.inline.built, second.inline.cached) == (0, 1)


def test_with_ahead_and_cache_off_the_worker_builds_as_torch_does(inline_settings):
    inline_settings.compile.inline_ahead = False
    inline_settings.compile.inline_cache = False
    problem = parse_problem(PROBLEM, "twice")
    with Pipeline("cpu", inline_settings) as pipeline:
        [result] = pipeline.judge([(problem, candidate(name="kp_twice_serial"))], timing=False)
        assert pipeline.stats.inline_pool_width == 0
    assert result.status == "ok", result.message
    [record] = result.details["load_inline"]
    assert record["path"] == "built_in_worker" and "inline_ahead" in record["why"]
    assert not (inline_settings.compile.inline_cache_dir).exists()
