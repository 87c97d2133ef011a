"""Records: stable content ids, metadata for filtering, exact round trips through JSON."""

from __future__ import annotations

from datetime import datetime, timezone

from kernelpro.memory import Attempt, CompileFix, Insight, ProblemSignature
from kernelpro.memory.records import record_from_json
from tests.memory.conftest import SOFTMAX, lessons


def test_problem_signature_hashes_the_reference_source():
    a = ProblemSignature.of("softmax", "class Model:\n    pass\n")
    assert a == ProblemSignature.of("softmax", "class Model:\r\n    pass")  # line endings, trailing space
    assert a != ProblemSignature.of("softmax", "class Model:\n    x = 1\n")
    assert a.key == f"softmax@{a.source_hash}" and len(a.source_hash) == 16


def test_id_depends_on_content_not_on_when_or_tag_order():
    first = Insight(run_id="r", text="use warp shuffles", tags=["b", "A"])
    later = Insight(run_id="r", text="use warp shuffles", tags=["a", "b", "a"],
                    created_at=datetime(2030, 1, 1, tzinfo=timezone.utc))
    assert first.id == later.id and first.id.startswith("insight-")
    assert first.id != Insight(run_id="r", text="use warp shuffles!", tags=["a", "b"]).id
    assert first.id != Insight(run_id="other", text="use warp shuffles", tags=["a", "b"]).id


def test_every_kind_round_trips_through_json():
    for record in lessons():
        again = record_from_json(record.model_dump_json())
        assert again == record and type(again) is type(record) and again.id == record.id


def test_metadata_is_flat_and_holds_the_filters():
    attempt = lessons()[0]
    metadata = attempt.metadata()
    assert all(isinstance(v, (str, int, float, bool)) for v in metadata.values())
    assert metadata["kind"] == "attempt" and metadata["problem"] == SOFTMAX.name
    assert metadata["problem_hash"] == SOFTMAX.source_hash and metadata["gpu"] == "H100"
    assert metadata["outcome"] == "ok" and metadata["run_id"] == "run-1" and metadata["succeeded"] is True
    assert record_from_json(str(metadata["record"])) == attempt
    fix = CompileFix(error="e", fix="f", backend="triton")
    assert "run_id" not in fix.metadata() and fix.metadata()["backend"] == "triton"


def test_success_means_correct_and_faster():
    base = {"run_id": "r", "problem": SOFTMAX, "gpu": "H100", "idea": "x"}
    assert Attempt(**base, outcome="ok", speedup=1.5).succeeded
    assert not Attempt(**base, outcome="ok", speedup=0.8).succeeded
    assert not Attempt(**base, outcome="incorrect", speedup=3.0).succeeded


def test_summaries_are_single_lines_within_their_limit():
    long = Insight(run_id="r", text="word " * 500)
    assert len(long.summary(limit=120)) <= 120 and long.summary(limit=120).endswith("…")
    fix = CompileFix(error="line one\n  line two\n" * 50, fix="add the include", backend="cuda")
    assert "\n" not in fix.summary() and fix.summary().endswith("add the include")


def test_an_attempt_within_the_noise_is_remembered_as_no_measurable_gain():
    same = Attempt(run_id="r", problem=SOFTMAX, gpu="H200", idea="fuse", outcome="ok", speedup=1.01,
                   speedup_ci95=[0.99, 1.03], speed_verdict="same")
    assert "Outcome: ok, speedup no measurable gain (1.01x [0.99-1.03])." in same.document()
    assert not same.succeeded and same.metadata()["speed_verdict"] == "same"
    faster = same.model_copy(update={"speedup": 1.5, "speedup_ci95": [1.45, 1.55], "speed_verdict": "faster"})
    assert "1.50x [1.45-1.55] faster" in faster.summary() and faster.succeeded
    # an earlier record, without an interval, keeps its old meaning
    assert Attempt(run_id="r", problem=SOFTMAX, gpu="H200", idea="fuse", outcome="ok", speedup=1.2).succeeded
