"""What `kernelpro suite run` is asked for: a new suite from its sources and options, or new totals for the one
it resumes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from kernelpro.cli.errors import fail
from kernelpro.cli.inputs import (
    CORRECTNESS_ENV,
    SCORECARD_ENV,
    correctness_or_fail,
    objective_or_fail,
    scorecard_or_fail,
)


def create_from_options(sources: list[Path], level: list[int], tasks: Optional[str], device: str, policy: Optional[str],
            model: Optional[str], max_iters: Optional[int], time_budget: Optional[str], gpu_budget: Optional[str],
            usd_budget: Optional[float], per_problem_budget: Optional[str], runs_dir: Path, ray: Optional[str],
            no_memory: bool, no_profile: bool, settings, objective: Optional[str] = None,
            correctness: Optional[str] = None, scorecard: Optional[str] = None, overnight: bool = False):
    from kernelpro.harness.judge import resolve_device
    from kernelpro.seams import SEARCH_POLICIES
    from kernelpro.suite.budget import BudgetError, Limits, parse_per_problem, seconds
    from kernelpro.suite.layout import SuiteConfig, create_suite
    from kernelpro.suite.recorded_env import settings_environment
    from kernelpro.suite.sources import SourceError, resolve_sources

    if refused := SEARCH_POLICIES.refusal(policy, "--policy"):
        fail(refused)
    try:
        refs = resolve_sources(list(sources), level or None, tasks, settings.suite.robust_kbench_filters)
        totals = Limits(time_s=seconds(time_budget), gpu_s=seconds(gpu_budget), usd=usd_budget)
        if overnight and totals.time_s is None:  # one night, said in the plan's line
            totals.time_s = settings.suite.overnight_time_budget_s
        per_problem = parse_per_problem(per_problem_budget)
    except (SourceError, BudgetError) as error:
        fail(str(error))
    device = resolve_device(device if device != "auto" else settings.device)
    objective_or_fail(objective, settings, device)
    correctness_or_fail(correctness, settings)
    if correctness is not None:  # kept with the suite's settings: every run and every resume judges by it
        os.environ[CORRECTNESS_ENV] = settings.harness.correctness_profile
    scorecard_or_fail(scorecard, settings)
    if scorecard is not None:  # kept with the suite's settings: every run and every resume decides by it
        os.environ[SCORECARD_ENV] = settings.search.scorecard
    config = SuiteConfig(sources=[str(Path(s).resolve()) for s in sources], levels=level, tasks=tasks,
                         device=device, policy=policy, objective=settings.search.objective, model=model,
                         max_iters=settings.suite.default_max_iters if max_iters is None else max_iters, totals=totals,
                         per_problem=per_problem, baselines=list(settings.suite.baselines), no_memory=no_memory,
                         no_profile=no_profile, ray=ray or settings.suite.ray_address,
                         environment=settings_environment())
    if overnight:  # cheap problems first, shares by cost: the plan is kept with the config
        from kernelpro.suite.overnight import plan_suite

        refs, config.overnight = plan_suite(refs, device, config.max_iters, Path(runs_dir), settings,
                                            budget_defaulted=time_budget is None, local=not config.ray)
    return create_suite(Path(runs_dir), config, refs)


def new_totals(time_budget: Optional[str], gpu_budget: Optional[str], usd_budget: Optional[float]) -> dict:
    """The suite totals given on a ``--resume``, which replace those the suite started with."""
    from kernelpro.suite.budget import BudgetError, seconds

    try:
        given = {"time_s": seconds(time_budget), "gpu_s": seconds(gpu_budget), "usd": usd_budget}
    except BudgetError as error:
        fail(str(error))
    return {name: value for name, value in given.items() if value is not None}
