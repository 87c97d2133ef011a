"""Retrieval for the agents: related lessons first, boosts, one copy of near-identical lessons, the budget."""

from __future__ import annotations

import pytest

from kernelpro.memory import Attempt, Boosts, Insight, ProblemSignature, retrieve
from kernelpro.memory.retrieve import HEADER
from tests.memory.conftest import GEMM, SOFTMAX, lessons

LAYERNORM = ProblemSignature.of("layernorm", "class Model: layer_norm over the last dimension")


def test_lessons_from_a_related_problem_rank_first(store):
    records = lessons()
    store.add_many(records)
    found = retrieve(store, "LayerNorm over the last dimension: mean and variance of each row (a row reduction)",
                     "memory bound; the per-row reduction dominates", problem=LAYERNORM, gpu="H100")
    order = [lesson.record.id for lesson in found.items]
    reductions = [order.index(records[i].id) for i in (0, 1)]
    gemm = [order.index(records[i].id) for i in (2, 3, 4) if records[i].id in order]
    assert gemm, "the GEMM lessons fit the budget too"
    assert max(reductions) < min(gemm)
    assert [lesson.score for lesson in found.items] == sorted((lesson.score for lesson in found.items), reverse=True)


def test_same_problem_same_gpu_and_success_are_boosted(store):
    records = lessons()
    store.add_many(records)
    found = retrieve(store, "softmax", problem=SOFTMAX, gpu="H100")
    boost = {lesson.record.id: lesson.score - lesson.similarity for lesson in found.items}
    b = Boosts()
    assert boost[records[0].id] == pytest.approx(b.same_problem + b.same_gpu + b.successful)  # ok, 2.4x
    assert boost[records[1].id] == pytest.approx(b.same_problem)  # an insight on this problem
    assert boost[records[2].id] == pytest.approx(b.same_gpu + b.successful)  # GEMM on H100, 1.3x
    assert boost[records[4].id] == pytest.approx(0.0)  # GEMM on A100, incorrect
    renamed = ProblemSignature(name=SOFTMAX.name, source_hash="0" * 16)  # same name, other source
    boost = {x.record.id: x.score - x.similarity for x in retrieve(store, "softmax", problem=renamed).items}
    assert boost[records[1].id] == pytest.approx(b.same_problem_name)


def test_a_same_problem_lesson_wins_over_its_twin_elsewhere(store):
    idea = "fuse the bias add into the epilogue and vectorise the loads with float4"
    elsewhere = Attempt(run_id="a", problem=GEMM, gpu="H100", idea=idea, outcome="ok", speedup=1.2)
    here = Attempt(run_id="b", problem=SOFTMAX, gpu="H100", idea=idea, outcome="ok", speedup=1.2)
    store.add_many([elsewhere, here])
    found = retrieve(store, "vectorised loads in the epilogue", problem=SOFTMAX)
    assert [lesson.record.id for lesson in found.items] == [here.id]  # its twin is a near-duplicate


def test_near_identical_lessons_are_given_once(store):
    twins = [
        Insight(run_id="r1", text="Use warp shuffles for the row reduction instead of shared memory."),
        Insight(run_id="r2", text="Use warp shuffles for the row reduction instead of shared memory."),
        Insight(run_id="r3", text="Use warp shuffles for the row reduction, instead of shared memory!"),
    ]
    distinct = Insight(run_id="r4", text="Keep the whole row in registers when it has at most 1024 elements.")
    store.add_many([*twins, distinct])
    assert store.count() == 4
    found = retrieve(store, "row reduction with warp shuffles")
    texts = [lesson.record.text for lesson in found.items]
    assert len(texts) == 2 and distinct.text in texts
    assert sum("warp shuffles" in t for t in texts) == 1


def test_the_rendered_text_stays_within_the_budget(store):
    store.add_many(lessons())
    store.add_many([Insight(run_id="bulk", text=f"lesson {i}: unroll the reduction loop {i + 2} times and "
                            f"keep {i + 1} partial sums in registers") for i in range(20)])
    full = retrieve(store, "row reduction", budget_chars=100_000)
    for budget in (120, 400, 1000):
        found = retrieve(store, "row reduction", budget_chars=budget)
        text = found.render()
        assert 0 < len(text) <= budget and text.startswith(HEADER)
        assert len(found.items) < len(full.items)
        assert [x.record.id for x in found.items] == [x.record.id for x in full.items[: len(found.items)]]
    assert retrieve(store, "row reduction", budget_chars=len(HEADER)).render() == ""
    assert len(retrieve(store, "row reduction").render()) <= store.settings.retrieval_budget_chars


def test_rendering_is_concise(store):
    records = lessons()
    store.add_many(records)
    lines = retrieve(store, "softmax", kinds=["attempt"]).render().splitlines()
    assert lines[0] == HEADER
    assert lines[1] == ("- [softmax_rows on H100: ok 2.40x] one warp per row; max and sum reduced with warp "
                        "shuffles (__shfl_xor_sync) — softmax row reduction was bound by shared-memory round trips")
    assert all(line.startswith("- [gemm_fp16 on ") for line in lines[2:]) and len(lines) == 4


def test_kinds_and_an_empty_memory(store):
    assert retrieve(store, "anything").render() == ""
    store.add_many(lessons())
    found = retrieve(store, "shfl undefined", kinds=["compile_fix"])
    assert [lesson.record.kind for lesson in found.items] == ["compile_fix"]
    assert "→ fix: use __shfl_xor_sync" in found.render()
