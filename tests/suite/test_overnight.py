"""`suite run --overnight`'s plan without a child process: problems ordered by what is known of their cost (the
baseline cache first, else their level and input sizes read from their source), budget shares weighted by that
cost with a floor and the per-problem cap, the projection's words, and a plan that the ledger keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpro.config import Settings
from kernelpro.harness.result import EvalResult
from kernelpro.problem import load_problem
from kernelpro.suite import overnight_costs as costs
from kernelpro.suite.baseline_cache import RunBaselines
from kernelpro.suite.baselines import baseline_source
from kernelpro.suite.budget import Limits, share
from kernelpro.suite.driver import Driver
from kernelpro.suite.lanes import Lane
from kernelpro.suite.layout import SuiteConfig, create_suite, open_suite
from kernelpro.suite.local import LocalBackend
from kernelpro.suite.overnight import make_plan, plan_suite, project
from kernelpro.suite.sources import resolve_sources
from kernelpro.suite.static_size import input_bytes
from tests.conftest import DATA
from tests.suite.helpers import ledger_with, run_summary

PROBLEM = '''import torch
import torch.nn as nn

batch_size = {batch}
dim = 1024 * 4


class Model(nn.Module):
    def forward(self, x, labels):
        return x.sum() + labels.sum()


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randint(0, 10, (batch_size,))]


def get_init_inputs():
    return []
'''


def kernelbench(tmp_path: Path, problems: dict[str, int]) -> Path:
    """A KernelBench-shaped checkout: ``levelN/T_Name.py`` -> the batch size of its inputs."""
    root = tmp_path / "KernelBench"
    for name, batch in problems.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PROBLEM.format(batch=batch))
    return root


def cached_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("KERNELPRO_CACHE__ROOT", str(tmp_path / "cache"))
    return Settings()


def keep_baseline(path: str, settings: Settings, elapsed_s: float, peak_mb: float | None = None) -> None:
    """A compile baseline's verdict for ``path`` in the cache, as a run on this machine keeps it."""
    problem = load_problem(path)
    found = RunBaselines.for_run(problem, "cpu", settings)
    details = {"timing": {"gpu_peak_mb": peak_mb}} if peak_mb else {}
    result = EvalResult(status="ok", correct=True, speedup=1.0, elapsed_s=elapsed_s, details=details)
    assert found.keep("compile_default", baseline_source(problem, "compile_default"), result) is None


def test_input_sizes_are_read_from_the_source_without_running_it():
    assert input_bytes(PROBLEM.format(batch=16)) == 16 * 4096 * 4 + 16 * 8
    assert input_bytes((DATA / "problems" / "softmax_wide.py").read_text()) == 8 * 16384 * 4
    unreadable = PROBLEM.format(batch="int(open('x').read())")
    assert input_bytes(unreadable) is None


def test_without_anything_known_cheap_levels_and_small_inputs_go_first_and_ties_keep_kernelbench_order(
        tmp_path, monkeypatch):
    settings = cached_settings(tmp_path, monkeypatch)
    root = kernelbench(tmp_path, {"level1/1_Big.py": 4096, "level1/2_Small.py": 16, "level1/3_AlsoSmall.py": 16,
                                  "level2/1_Fused.py": 16, "level3/1_Net.py": 16})
    refs = resolve_sources([root])
    ordered, plan = plan_suite(refs, "cpu", 1, tmp_path / "runs", settings, budget_defaulted=True)
    assert [ref.key for ref in ordered] == ["level1/2_Small", "level1/3_AlsoSmall", "level2/1_Fused", "level1/1_Big",
                                            "level3/1_Net"]
    assert list(plan.estimates) == [ref.key for ref in ordered] and not any(e.known for e in plan.estimates.values())
    # the problems nothing is known of share the per-problem figure: their mean is that figure
    assert sum(e.gpu_s for e in plan.estimates.values()) == pytest.approx(5 * 2.5 * 60)


def test_a_problem_whose_cached_baseline_is_expensive_goes_last(tmp_path, monkeypatch):
    settings = cached_settings(tmp_path, monkeypatch)
    names = ["scale_relu.py", "softmax_wide.py", "repeated_relu.py"]
    refs = resolve_sources([DATA / "problems" / name for name in names])
    keep_baseline(refs[0].path, settings, elapsed_s=900.0)  # the smallest inputs, the costliest judgment
    keep_baseline(refs[2].path, settings, elapsed_s=0.5)
    ordered, plan = plan_suite(refs, "cpu", 1, tmp_path / "runs", settings, budget_defaulted=False)
    assert [ref.key for ref in ordered] == ["repeated_relu", "softmax_wide", "scale_relu"]
    judgments = costs.judgments_per_problem(1, settings)
    assert plan.estimates["scale_relu"].known and plan.estimates["scale_relu"].gpu_s == 900.0 * judgments
    assert not plan.estimates["softmax_wide"].known


def test_shares_follow_the_estimated_cost_with_a_floor_and_the_per_problem_cap(tmp_path, monkeypatch):
    settings = cached_settings(tmp_path, monkeypatch)
    totals, spent = Limits(time_s=1000.0, gpu_s=400.0, usd=4.0), Limits()
    cheap = share(totals, Limits(), spent, 2, 1, weight=100.0, weight_left=400.0)
    assert (cheap.time_s, cheap.gpu_s, cheap.usd) == (250.0, 100.0, 2.0)  # dollars stay equal
    assert share(totals, Limits(), spent, 2, 1).time_s == 500.0  # without a plan: equal shares
    assert share(totals, Limits(time_s=200.0), spent, 2, 1, weight=300.0, weight_left=400.0).time_s == 200.0
    assert share(totals, Limits(), spent, 2, 2, weight=300.0, weight_left=400.0).time_s == 1000.0  # a lane each
    refs = resolve_sources([DATA / "problems" / name for name in ("scale_relu.py", "softmax_wide.py")])
    figure = costs.PerProblem(gpu_s=100.0, wall_s=100.0, source="measured")  # nothing spent beside the GPU
    _, plan = make_plan(refs, {"scale_relu": costs.Measured(0.001)}, figure, 4, settings)
    assert plan.estimates["scale_relu"].wall_s == pytest.approx(0.004)
    assert plan.weights["scale_relu"] == pytest.approx(0.25 * (100.0 + 0.004) / 2)  # a quarter of an equal share
    assert plan.weights["softmax_wide"] == plan.estimates["softmax_wide"].wall_s == 100.0


def test_the_driver_gives_each_problem_its_weighted_share(tmp_path, monkeypatch):
    settings = cached_settings(tmp_path, monkeypatch)
    refs = resolve_sources([DATA / "problems" / name for name in ("scale_relu.py", "softmax_wide.py")])
    ordered, plan = plan_suite(refs, "cpu", 1, tmp_path / "runs", settings, budget_defaulted=False)
    config = SuiteConfig(sources=["x"], device="cpu", totals=Limits(time_s=3600.0), overnight=plan)
    paths, ledger = create_suite(tmp_path / "suites", config, ordered)
    driver = Driver(paths, ledger, settings, LocalBackend([Lane(name="cpu0")]))
    rows = ledger.problems()
    keys = [row.key for row in rows]
    specs = {row.key: driver._spec(row, driver.backend.lanes[0], 2, rows, keys) for row in rows}
    total = sum(plan.weights.values())
    assert specs["scale_relu"].budgets.time_s < specs["softmax_wide"].budgets.time_s
    # each problem's whole share, its process's start (nothing measured yet) taken from it
    assert specs["scale_relu"].budgets.time_s == pytest.approx(3600.0 * plan.weights["scale_relu"] / total)


def test_the_projection_says_where_its_figures_came_from_and_what_the_budget_reaches(tmp_path, monkeypatch):
    settings = cached_settings(tmp_path, monkeypatch)
    refs = resolve_sources([DATA / "problems" / name for name in ("scale_relu.py", "softmax_wide.py",
                                                                    "repeated_relu.py")])
    keep_baseline(refs[0].path, settings, elapsed_s=6.0)
    _, plan = plan_suite(refs, "cpu", 1, tmp_path / "runs", settings, budget_defaulted=True)
    judgments = costs.judgments_per_problem(1, settings)
    wall = 2 * 7.2727 * 60 + (7.2727 - 2.5) * 60 + 6.0 * judgments
    within = project(plan, 1, "cpu", 8 * 3600.0)
    assert within.text == (
        f"overnight plan: 3 problems, cheap first; about {wall / 3600:.1f} hours on the CPU (1 lane), about "
        f"{(2 * 150 + 6.0 * judgments) / 3600:.1f} CPU-hours (from 1 cached baseline and 2.5 GPU-minutes a problem "
        "where nothing is known, suite.overnight_gpu_minutes_per_problem as measured on an H100); within the "
        "8.0-hour time budget (suite.overnight_time_budget_s: no --time-budget was given)")
    assert (within.reach, within.known, within.wall_s) == (3, 1, pytest.approx(wall, abs=0.5))
    short = project(plan, 1, "cpu", 0.2 * 3600)
    assert short.reach == 1 and short.text.endswith(
        "more than the 0.2-hour time budget (suite.overnight_time_budget_s: no --time-budget was given), which "
        "reaches about 1 of them")
    assert "on 2 GPUs, 4 lanes" in project(plan.model_copy(update={"lanes_per_gpu": 2}), 4, "cuda", None).text


def test_earlier_suites_here_give_the_figure_where_nothing_is_known(tmp_path, monkeypatch):
    settings = cached_settings(tmp_path, monkeypatch)
    _, earlier = ledger_with(tmp_path / "runs", {"a": {"result": run_summary(True, 2.0, gpu_s=60.0)},
                                                 "b": {"result": run_summary(False, None, gpu_s=180.0)},
                                                 "c": {"state": "pending"}})
    for key in ("a", "b"):
        earlier.update(key, wall_s=600.0)
    figure = costs.per_problem(tmp_path / "runs", "cuda", costs.judgments_per_problem(8, settings), settings)
    assert (figure.gpu_s, figure.wall_s, figure.overhead_s) == (120.0, 600.0, 480.0)
    assert figure.source == "2.0 GPU-minutes a problem where nothing is known, measured over 2 problem(s) of " \
                            "earlier suites here"
    halved = costs.per_problem(tmp_path / "runs", "cuda", costs.judgments_per_problem(8, settings) // 2, settings)
    assert costs.per_problem(tmp_path / "runs", "cpu", 11, settings).source.endswith("as measured on an H100")
    assert halved.gpu_s < figure.gpu_s


def test_lanes_per_gpu_never_exceed_what_its_memory_holds():
    assert costs.lanes_per_gpu(4, 81_559.0, 30_000.0) == 2
    assert costs.lanes_per_gpu(4, 81_559.0, 90_000.0) == 1
    assert costs.lanes_per_gpu(3, None, 30_000.0) == costs.lanes_per_gpu(3, 81_559.0, None) == 3


def test_the_ledger_keeps_the_plans_order_and_projection_for_a_resume(tmp_path, monkeypatch):
    settings = cached_settings(tmp_path, monkeypatch)
    refs = resolve_sources([DATA / "problems" / name for name in ("softmax_wide.py", "scale_relu.py")])
    ordered, plan = make_plan(refs, {}, costs.per_problem(tmp_path, "cpu", 2, settings), 2, settings)
    plan.projection = project(plan, 1, "cpu", 3600.0)
    paths, _ = create_suite(tmp_path / "suites", SuiteConfig(sources=["x"], device="cpu", overnight=plan), ordered)
    _, reopened = open_suite(tmp_path / "suites", paths.suite_id)
    assert [row.key for row in reopened.problems()] == ["scale_relu", "softmax_wide"]
    kept = SuiteConfig.model_validate(reopened.suite()["config"]).overnight
    assert kept == plan and list(kept.estimates) == ["scale_relu", "softmax_wide"]
