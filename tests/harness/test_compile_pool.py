"""Inductor's compile pool, asked for with ``TORCHINDUCTOR_COMPILE_THREADS``, is the judge's, not the candidate's:
an honest ``torch.compile`` candidate that compiles cold keeps its verdict (it was rejected as
``background_thread``, for the pool's first thread)."""

from __future__ import annotations

from kernelpro.harness.judge import judge
from kernelpro.recipes.catalogue import recipes_for
from tests.conftest import problem


def test_a_cold_compile_with_a_compile_pool_is_not_a_background_thread(settings, monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "2")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))  # nothing compiled before
    softmax = problem("softmax_wide")
    compiled = next(r for r in recipes_for(softmax, "cpu") if r.name == "compile_default")
    result = judge(softmax, compiled.source, device="cpu", settings=settings)
    assert (result.status, result.correct) == ("ok", True), result.message
    assert not [g for g in result.guards if g.reason in ("background_thread", "background_process")]
