"""The seams chosen by name (``kernelpro.seams``): a search policy, a judge, a gate and a suite backend registered at
run time are accepted by the settings and the command line and used by real CPU runs; an unknown name is refused
with the choices listed, wherever it is given."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import pytest
from typer.testing import CliRunner

from kernelpro.config import SettingsError, load_settings
from kernelpro.graphs.context import Budgets
from kernelpro.harness.judge import PipelineEvaluator
from kernelpro.harness.ports import Proposal
from kernelpro.problem import Problem
from kernelpro.registry import UnknownName
from kernelpro.runs.files import RunFiles
from kernelpro.seams import GATES, JUDGES, SEARCH_POLICIES, SUITE_BACKENDS
from kernelpro.search.policies import build_policy
from kernelpro.search.policy import Expansion
from kernelpro.search.tree import VariantTree
from tests.conftest import DATA, candidate, problem

FAST = {"KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3", "KERNELPRO_HARNESS__TIMING_TRIALS": "5",
        "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5", "KERNELPRO_HARNESS__REFEREE": "false",
        "KERNELPRO_HARNESS__SECOND_OPINION": "false", "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "1e9",
        "KERNELPRO_SEARCH__FINALISTS": "0"}


class RootOnly:
    """Grows the reference alone, its ideas in the order they were planned: the smallest policy the loop takes."""

    name = "root_only"

    def propose(self, tree: VariantTree, budget: int) -> list[Expansion]:
        root = tree.root
        if not root.ideas:
            return [] if root.plans else [Expansion(root.id, None)]
        return [Expansion(root.id, idea, idea.prior) for idea in root.ideas[:budget]]

    def observe(self, tree: VariantTree, variant_ids: list[str]) -> None:
        pass


class CountingJudge(PipelineEvaluator):
    """The local judge, counting the candidates each batch asks it about."""

    batches: list[int] = []

    def judge_many(self, problem: Problem, candidates: Sequence[str], **kwargs) -> list:
        CountingJudge.batches.append(len(candidates))
        return super().judge_many(problem, candidates, **kwargs)

    def check_many(self, problem: Problem, candidates: Sequence[str]) -> list:
        CountingJudge.batches.append(len(candidates))
        return super().check_many(problem, candidates)


class FirstOnly:
    """A gate that measures the first proposal of each batch and sets the others aside."""

    name = "first_only"
    batches: list[list[str]] = []

    def choose(self, problem: Problem, proposals: Sequence[Proposal]) -> list[str]:
        FirstOnly.batches.append([p.variant_id for p in proposals])
        return [proposals[0].variant_id]


class CountingLanes:
    """This machine's lanes (the local backend), counting the problems started on them."""

    name = "counting_lanes"
    started: list[str] = []

    def __init__(self, address, device: str, settings) -> None:
        from kernelpro.suite.local import local_backend

        self.inner = local_backend(address, device, settings)
        self.lanes = self.inner.lanes

    def start(self, spec, lane) -> None:
        CountingLanes.started.append(spec.key)
        self.inner.start(spec, lane)

    def wait(self, timeout_s: float) -> list:
        return self.inner.wait(timeout_s)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def toys():
    """The three toys registered for one test (one line each), and gone after it."""
    SEARCH_POLICIES.register("root_only", lambda settings: RootOnly())
    JUDGES.register("counting", CountingJudge)
    GATES.register("first_only", lambda settings, gpu, meter=None: FirstOnly())
    SUITE_BACKENDS.register("counting_lanes", CountingLanes)
    CountingJudge.batches, FirstOnly.batches, CountingLanes.started = [], [], []
    yield
    SEARCH_POLICIES.unregister("root_only")
    JUDGES.unregister("counting")
    GATES.unregister("first_only")
    SUITE_BACKENDS.unregister("counting_lanes")


@pytest.fixture
def clean_env(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no kernelpro.toml of the developer's leaks in
    for key in [k for k in os.environ if k.startswith("KERNELPRO_")]:
        monkeypatch.delenv(key)
    for key, value in {**FAST, "KERNELPRO_FORECAST__DATASET": str(tmp_path / "judged.jsonl")}.items():
        monkeypatch.setenv(key, value)


def test_a_registered_policy_and_judge_run_kernelpro_optimize(toys, clean_env, tmp_path, monkeypatch):
    from kernelpro.cli import app

    monkeypatch.setenv("KERNELPRO_HARNESS__BACKEND", "counting")  # the settings accept the registered judge
    result = CliRunner().invoke(app, ["optimize", str(DATA / "problems" / "scale_relu.py"), "--device", "cpu",
                                      "--policy", "root_only", "--max-iters", "2", "--runs-dir",
                                      str(tmp_path / "runs"), "--no-memory", "--json"])
    assert result.exit_code in (0, 3), result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["search_policy"] == "root_only" and summary["candidates_judged"] == 2
    assert sum(CountingJudge.batches) == 2  # every candidate went through the registered judge
    logged = [json.loads(line) for line in open(summary["results"]) if "final_of" not in line]
    assert len(logged) == 2 and all(e["origin"].startswith("recipe:") and e["status"] == "ok" for e in logged)


def test_a_registered_suite_backend_runs_the_suites_problems(toys, clean_env, tmp_path, monkeypatch):
    from kernelpro.cli import app

    source = tmp_path / "problems"
    source.mkdir()
    (source / "scale_relu.py").write_text((DATA / "problems" / "scale_relu.py").read_text())
    monkeypatch.setenv("KERNELPRO_SUITE__BACKEND", "counting_lanes")  # the settings accept the registered one
    monkeypatch.setenv("KERNELPRO_SUITE__BASELINES", '["eager"]')
    result = CliRunner().invoke(app, ["suite", "run", str(source), "--device", "cpu", "--max-iters", "1",
                                      "--no-memory", "--runs-dir", str(tmp_path / "suites"), "--json"])
    assert result.exit_code == 0, result.output
    assert CountingLanes.started == ["scale_relu"]  # the problem ran on the registered backend's lanes
    assert json.loads(result.stdout.strip().splitlines()[-1])["problems"] == 1


def test_a_registered_gate_is_the_runs_gate(toys, settings, tmp_path):
    from kernelpro.app.compose import build_context
    from tests.graphs.helpers import run

    settings.memory.path = tmp_path / "memory"
    settings.forecast.gate, settings.search.policy, settings.search.finalists = "first_only", "root_only", 0
    settings.harness.referee = settings.harness.second_opinion = False
    files = RunFiles.create(tmp_path / "runs", "run-test", {})
    context = build_context(settings, problem("scale_relu"), "cpu", "CPU", files, budgets=Budgets(max_iters=3),
                            use_memory=False)
    try:
        assert isinstance(context.gate, FirstOnly) and isinstance(context.policy, RootOnly)
        graph, config = run(context)
    finally:
        context.evaluate.close()
    tree = VariantTree.from_state(graph.get_state(config).values["variants"])
    assert FirstOnly.batches and len(FirstOnly.batches[0]) > 1  # the first batch offered it several
    gated = [v for v in tree if v.gated]
    assert len(gated) == sum(len(batch) - 1 for batch in FirstOnly.batches)


def test_the_judge_tool_without_a_session_judge_uses_the_named_one(toys, settings):
    from kernelpro.tools.registry import ToolContext, tools_by_name

    settings.harness.backend = "counting"
    tools = tools_by_name(ToolContext(settings, problem("scale_relu"), device="cpu"))
    reply = tools["judge_candidate"].invoke({"type": "tool_call", "id": "1", "name": "judge_candidate",
                                             "args": {"source": candidate("honest_scale_relu"), "timing": False}})
    assert reply.content.startswith("ok") and CountingJudge.batches == [1]


def test_unknown_names_are_refused_with_the_choices(toys, clean_env):
    from kernelpro.app.forecast import build_gate
    from kernelpro.cli import app

    choices = "auto, greedy, beam, mcts, recipes, root_only"
    with pytest.raises(SettingsError, match=f"unknown search policy 'best'; choose one of {choices}"):
        load_settings(search={"policy": "best"})
    with pytest.raises(SettingsError, match="unknown judge 'remote'; choose one of local, counting"):
        load_settings(harness={"backend": "remote"})
    with pytest.raises(SettingsError, match="unknown gate 'oracle'; choose one of off, select, selective, first_only"):
        load_settings(forecast={"gate": "oracle"})
    with pytest.raises(SettingsError, match="unknown suite backend 'slurm'; choose one of local, ray, counting_lanes"):
        load_settings(suite={"backend": "slurm"})
    with pytest.raises(SettingsError, match="class_prior counts the classes of judged rows"):
        load_settings(forecast={"forecaster": "class_prior"})
    with pytest.raises(UnknownName, match=f"unknown search policy 'best'; choose one of {choices}"):
        build_policy("best", load_settings().search)
    settings = load_settings()
    settings.forecast.gate = "oracle"  # set past the settings' check: the registry refuses it when building
    with pytest.raises(UnknownName, match="unknown gate 'oracle'"):
        build_gate(settings, "cpu")
    refused = CliRunner().invoke(app, ["optimize", str(DATA / "problems" / "scale_relu.py"), "--policy", "best"])
    assert refused.exit_code == 2 and f"--policy must be one of {choices}, not 'best'" in " ".join(
        refused.output.split())
