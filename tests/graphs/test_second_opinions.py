"""The second opinion at a run's end: the contender timed again in a real fresh process, a disagreeing best no
longer the best, what the run reports, and a re-judgment that settles a disputed finalist."""

from __future__ import annotations

from kernelpro.graphs.finalists import rejudge_finalists
from kernelpro.graphs.second_opinions import contender, disputed, opinion_facts, second_opinions, untrusted_reason
from kernelpro.harness.result import TIMING_DISAGREEMENT, EvalResult, GuardFinding
from kernelpro.report.content import second_opinion_text
from kernelpro.search.tree import VariantTree
from tests.conftest import candidate, problem
from tests.graphs.helpers import make_context
from tests.harness.test_second_opinion import SLEEPER, faster


def _tree_with(source: str, verdict: EvalResult) -> tuple[VariantTree, str]:
    tree = VariantTree.with_root(problem("scale_relu").source)
    variant = tree.spawn(tree.root.id, source, "claimed fast", "llm", 1)
    variant.record(verdict)
    return tree, variant.id


def test_a_best_the_fresh_process_disputes_is_no_longer_the_best(settings, tmp_path):
    settings.harness.second_opinion = True
    settings.harness.second_opinion_budget_s = 0.3
    context = make_context(settings, tmp_path, None, problem_name="scale_relu")
    tree, vid = _tree_with(SLEEPER, faster(3.92, [3.85, 4.0]))
    context.files.write_source(vid, SLEEPER)  # as the run writes each candidate before judging it
    assert tree.best().id == vid and contender(tree).id == vid
    update: dict = {}
    events = second_opinions(context, tree, update)
    assert len(events) == 1 and "disagrees" in events[0] and "does not count" in events[0]
    assert tree.best() is None and contender(tree) is None  # nothing else to ask about
    settled = tree.get(vid).deciding_result
    assert disputed(settled) and settled.second_opinion.speedup < 1.0
    assert update["variants"][vid]["result"]["second_opinion"]["status"] == "disagree"
    assert disputed(context.files.stored_result(vid, SLEEPER))  # on disk too: a resumed run reads it back
    facts = opinion_facts(tree, None)
    assert facts["variant"] == vid and facts["status"] == "disagree" and facts["judged_speedup"] == 3.92
    assert "disagrees with the judge's 3.92x" in second_opinion_text(facts)
    assert "a second opinion in a fresh process timed it at" in untrusted_reason(tree)
    assert second_opinions(context, tree, {}) == []  # asked once


def test_switched_off_no_second_opinion_is_asked_and_a_floor_best_does_not_count(settings, tmp_path):
    settings.harness.second_opinion = False
    context = make_context(settings, tmp_path, None, problem_name="scale_relu")
    floor = GuardFinding(reason="below_memory_floor", severity="warn", source="dynamic", message="under the floor")
    tree, vid = _tree_with(SLEEPER, faster(3.92, [3.85, 4.0], floor))
    assert second_opinions(context, tree, {}) == []
    assert tree.best() is None and "below the memory floor" in untrusted_reason(tree)
    assert opinion_facts(tree, None) is None


def test_a_re_judgment_settles_a_disputed_finalist(settings, tmp_path):
    """A finalist's stored re-judgment that a second opinion disputed is judged afresh, not read back."""
    context = make_context(settings, tmp_path, None, problem_name="scale_relu")
    honest = candidate("honest_scale_relu")
    tree, vid = _tree_with(honest, faster(1.5, [1.4, 1.6]))
    variant = tree.get(vid)
    hollow = faster(3.92, [3.85, 4.0]).model_copy(update={"guards": [GuardFinding(
        reason=TIMING_DISAGREEMENT, severity="warn", source="dynamic", message="a fresh process timed 0.97x")]})
    context.files.write_source(f"{vid}.final", honest)
    context.files.store_result(f"{vid}.final", hollow)
    events = rejudge_finalists(context, tree, {})
    assert any(e.startswith("finalists re-judged") for e in events)
    assert variant.final is not None and not disputed(EvalResult.model_validate(variant.final))
    assert variant.final["speedup"] != 3.92  # the judge's own figure, not the disputed one
