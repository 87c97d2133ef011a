"""`kernelpro optimize`'s run, as its options ask it: the checks before anything runs, the ``RunSpec`` of a new run
or of one resumed (what its ``run.json`` holds, with the budgets given now), and its directory held.

Each refusal is one error line and its exit status (``cli/errors.fail``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelpro.cli.errors import cannot_write
from kernelpro.cli.errors import fail as _fail
from kernelpro.cli.inputs import (
    correctness_or_fail,
    device_or_fail,
    objective_or_fail,
    problem_or_fail,
    scorecard_or_fail,
)
from kernelpro.config import Settings
from kernelpro.problem import Problem

if TYPE_CHECKING:
    from kernelpro.app.run_claim import RunClaim
    from kernelpro.runs.spec import RunSpec


def _checked(settings: Settings, reference: Path, device: str, objective: str | None, correctness: str | None,
             scorecard: str | None, resume: str | None) -> tuple[Problem, str]:
    """The problem and the device, once the correctness check, the scorecard and the objective are set and can be
    had here."""
    correctness_or_fail(correctness, settings)
    scorecard_or_fail(scorecard, settings)
    problem = problem_or_fail(reference)
    device = device_or_fail(device, settings, asked_by=f"run {resume} ran on cuda" if resume else None)
    objective_or_fail(objective, settings, device)
    return problem, device


def _spec(settings: Settings, problem_path: Path, device: str, budgets: Any, flags: dict[str, bool],
          baselines: list[str], run_id: str | None, runs_dir: Path, judged_before: Path | None = None) -> RunSpec:
    """The run's spec, its choices as the checked settings now hold them."""
    from kernelpro.runs.spec import RunSpec

    return RunSpec(problem_path=problem_path, runs_dir=runs_dir, run_id=run_id, device=device,
                   budgets=budgets, policy=settings.search.policy, objective=settings.search.objective,
                   model=settings.llm.model, correctness=settings.harness.correctness_profile,
                   scorecard=settings.search.scorecard, baselines=baselines, judged_before=judged_before, **flags)


def new_spec(reference: Path, settings: Settings, given: dict[str, Any], flags: dict[str, bool],
              objective: str | None, correctness: str | None, scorecard: str | None, device: str,
              run_id: str | None, runs_dir: Path, judged_before: Path | None, baselines: list[str]
              ) -> tuple[RunSpec, Problem]:
    from kernelpro.runs.spec import Budgets

    problem, device = _checked(settings, reference, device, objective, correctness, scorecard, None)
    budgets = Budgets(**{key: value for key, value in given.items() if value is not None}
                      | ({} if given["usd"] is not None else {"usd": settings.llm.budget_usd}))
    if run_id is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}", run_id):
        _fail(f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-' (a directory name)")
    if run_id is not None and (Path(runs_dir) / run_id / "run.json").exists():
        _fail(f"a run {run_id!r} exists already in {runs_dir}; continue it with --resume {run_id}")
    return _spec(settings, Path(reference).resolve(), device, budgets, flags, baselines, run_id, runs_dir,
                 judged_before), problem


def resumed_spec(claim: RunClaim, settings: Settings, given: dict[str, Any], flags: dict[str, bool],
                  model: str | None, policy: str | None, objective: str | None, correctness: str | None,
                  scorecard: str | None, device: str, baselines_given: list[str]
                  ) -> tuple[RunSpec, Problem, bool]:
    """The spec of a resumed run: what its run.json holds, the budgets given now (which it then remembers) and
    the flags it was started with; a choice that cannot change on --resume is refused. Whether budgets were
    given now, too."""
    from kernelpro.cli.optimize_baselines import wanted_by_run
    from kernelpro.runs.spec import Budgets

    files, resume = claim.files, claim.run_id
    meta = files.meta()
    reference = Path(meta["problem_path"])
    new_budgets = {key: value for key, value in given.items() if value is not None}
    try:
        budgets = Budgets.model_validate({**meta["budgets"], **new_budgets})
    except ValueError as error:  # kept by a version that took any number
        _fail(f"run {resume} has a budget that allows nothing ({error.errors()[0]['loc'][0]}); give it anew "
              "with --max-iters, --time-budget, --gpu-budget or --usd-budget")
    if new_budgets:  # the resumed run goes on under the budgets given now, and remembers them
        try:
            files.update_meta(budgets=budgets.model_dump())
        except OSError as error:
            _fail(cannot_write(error, files.root))
    flags = {"interactive": flags["interactive"] or meta.get("interactive", False),
             "no_memory": meta.get("no_memory", flags["no_memory"]),
             "no_profile": meta.get("no_profile", flags["no_profile"])}
    if meta.get("model") and not model:
        settings.llm.model = meta["model"]
    if meta.get("search_policy") and policy is None:
        settings.search.policy = meta["search_policy"]
    if objective is not None and objective != meta.get("objective", "time"):
        _fail(f"run {resume} optimises {meta.get('objective', 'time')}; --objective cannot change on --resume")
    objective = meta.get("objective", objective)
    judged_by = meta.get("correctness", "kernelpro")  # a run judges every candidate by one check
    if correctness is not None and correctness != judged_by:
        _fail(f"run {resume} is judged by the {judged_by} correctness check; --correctness cannot change on "
              "--resume")
    decided_by = meta.get("scorecard", "kernelpro")  # a run decides its best by one scorecard
    if scorecard is not None and scorecard != decided_by:
        _fail(f"run {resume} decides its best by the {decided_by} scorecard; --scorecard cannot change on "
              "--resume")
    problem, device = _checked(settings, reference, meta["device"], objective, judged_by, decided_by, resume)
    wanted = wanted_by_run(files, baselines_given)
    return _spec(settings, reference, device, budgets, flags, wanted, resume, files.root.parent), problem, \
        bool(new_budgets)


def reopened_or_fail(runs_dir: Path, run_id: str) -> RunClaim:
    from kernelpro.app.run_claim import reopen_run
    from kernelpro.run_lock import RunBusy
    from kernelpro.runs.files import RunNotFound

    try:
        return reopen_run(runs_dir, run_id)
    except (RunNotFound, RunBusy) as error:
        _fail(str(error))


def created_or_fail(spec: RunSpec, problem: Problem) -> RunClaim:
    from kernelpro.app.run_claim import create_run
    from kernelpro.run_lock import RunBusy

    try:
        return create_run(spec, problem.name)
    except RunBusy as error:
        _fail(str(error))
    except OSError as error:  # nothing judged yet: no half-made run directory is left to resume
        _fail(cannot_write(error, spec.runs_dir))
