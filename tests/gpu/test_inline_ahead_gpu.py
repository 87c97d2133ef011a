"""load_inline candidates on CUDA: built ahead in the pool, shared, cached across pipelines, compile errors
condensed to the candidate's lines without a worker."""

from __future__ import annotations

import shutil

import pytest
import torch

from kernelpro.harness.pipeline import Pipeline
from tests.conftest import candidate, problem

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU"),
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="load_inline needs nvcc")]


@pytest.mark.timeout(600)  # cold builds against torch's headers, two of them for the broken source
def test_load_inline_is_built_ahead_then_loaded_from_the_cache(settings):
    settings.harness.timeout_s = 300
    honest = candidate("honest_load_inline_scale_relu")
    broken = honest.replace("fmaxf(x[i], 0.0f) * scale", "fmaxf(x[i], 0.0f) * undefined_scale")
    batch = [(problem("scale_relu"), honest), (problem("scale_relu"), honest + "\n# the same extension\n"),
             (problem("scale_relu"), broken)]
    with Pipeline("cuda", settings) as pipeline:
        first, shared, failed = pipeline.judge(batch)
        stats = pipeline.stats
    assert first.status == "ok" and shared.status == "ok", (first.message, shared.message)
    assert [r.details["load_inline"][0]["path"] for r in (first, shared)] == ["built_ahead"] * 2
    assert first.details["load_inline"][0]["lean_headers"] is True  # its CUDA source built on torch/types.h
    assert (stats.inline.built, stats.inline.failed) == (1, 1) and stats.inline.cpu_s > 0
    assert (failed.status, failed.reason) == ("compile_error", "kernel_compile_error")
    line = next(n for n, text in enumerate(broken.splitlines(), 1) if "undefined_scale" in text)
    assert f"candidate.py:{line}" in failed.message and "undefined_scale" in failed.message, failed.message
    assert len(failed.message) < 1500 and failed.elapsed_s is None

    with Pipeline("cuda", settings) as pipeline:
        [again] = pipeline.judge(batch[:1])
        assert pipeline.stats.inline.built == 0
    assert again.status == "ok" and again.details["load_inline"][0]["path"] == "cache_hit"
