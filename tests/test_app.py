"""The composition root: policies and judges by name from the settings, and the memory's technique scores."""

from __future__ import annotations

import pytest

from kernelpro.app.compose import JUDGES, SearchMemory, build_context
from kernelpro.graphs.context import Budgets
from kernelpro.harness.judge import PipelineEvaluator
from kernelpro.harness.ports import Evaluator, MeasureAll
from kernelpro.memory import Attempt, ProblemSignature
from kernelpro.runs.files import RunFiles
from tests.conftest import problem


def context_for(settings, tmp_path, **kwargs):
    settings.memory.path = tmp_path / "memory"
    files = RunFiles.create(tmp_path / "runs", "r", {})
    return build_context(settings, problem("scale_relu"), "cpu", "CPU", files, budgets=Budgets(), **kwargs)


@pytest.mark.parametrize(("name", "expected"), [("auto", "recipes"), ("greedy", "greedy"), ("beam", "beam"),
                                                ("mcts", "mcts")])
def test_the_policy_is_chosen_by_name_from_the_settings(settings, tmp_path, name, expected):
    settings.search.policy = name
    context = context_for(settings, tmp_path, use_memory=False)
    assert context.policy.name == expected and context.idea_source == "recipes"  # no model configured
    assert isinstance(context.gate, MeasureAll) and context.profile is None
    assert "need a GPU" in context.no_profile_reason


def test_the_judge_backend_is_chosen_by_name(settings, tmp_path):
    assert JUDGES["local"] is PipelineEvaluator
    context = context_for(settings, tmp_path, use_memory=False)
    assert isinstance(context.evaluate, PipelineEvaluator) and isinstance(context.evaluate, Evaluator)


def test_technique_scores_come_from_related_attempts(settings, tmp_path):
    settings.memory.path = tmp_path / "memory"
    memory = SearchMemory(settings, "CPU")
    signature = ProblemSignature.from_problem(problem("scale_relu"))
    memory.remember([
        Attempt(run_id="r", problem=signature, gpu="CPU", idea="fused", outcome="ok", speedup=1.8,
                speed_verdict="faster", tags=["fusion"]),
        Attempt(run_id="r", problem=signature, gpu="CPU", idea="tiled", outcome="incorrect", tags=["tiling"]),
    ])
    scores = memory.technique_scores(problem("scale_relu"))
    assert scores["fusion"] == pytest.approx(1.0) and scores["tiling"] == pytest.approx(-1.0)
    memory.store.close()
