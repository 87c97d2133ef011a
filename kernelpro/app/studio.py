"""The composition root's part for LangGraph Studio's optimisation graph (``langgraph.json``: ``optimize``).

Studio sends plain JSON (``graphs.studio.StudioInput``); ``open_studio_run`` turns it into the run's ``RunSpec``
and its real context the way `kernelpro optimize` does (``kernelpro.app.session.run_context``), and
``optimize_studio_graph`` is the graph the server loads. The chat's Studio graph is
``kernelpro.app.compose.chat_studio_graph``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelpro.graphs.context import OptimizeContext
    from kernelpro.runs.files import RunFiles
    from kernelpro.runs.spec import RunSpec


def optimize_studio_graph(config: Any = None) -> Any:
    """The optimisation graph for LangGraph Studio (``langgraph.json``): plain JSON inputs (``StudioInput``), the
    run's context built here from them and the settings, as `kernelpro optimize` builds it."""
    from kernelpro.graphs.studio import studio_builder

    return studio_builder(_studio_runs()).compile()


@functools.cache  # one set of open runs for every graph the server builds (it builds one per request)
def _studio_runs() -> Any:
    from kernelpro.graphs.studio import StudioRuns

    return StudioRuns(open_studio_run)


def open_studio_run(inputs: Any, run_id: str | None, usage: dict[str, Any] | None = None) -> OptimizeContext:
    """A Studio run's context: the settings with the inputs' model and policy, the problem, the device (``cuda``
    refused where no GPU is usable), the budgets, and a run directory under ``runs_dir`` (a new one, or
    ``run_id``'s opened again), built from the run's ``RunSpec`` as `kernelpro optimize` builds it
    (``app.session.run_context``). Raises ValueError (or ProblemError) with what to fix."""
    from kernelpro.app.session import run_context
    from kernelpro.config import load_settings
    from kernelpro.harness.jobs import resolve_device
    from kernelpro.llm.models import UsageMeter
    from kernelpro.problem import load_problem
    from kernelpro.runs.spec import Budgets, RunSpec
    from kernelpro.seams import SEARCH_POLICIES

    settings = load_settings()
    if inputs.get("model"):
        settings.llm.model = inputs["model"]
    policy = inputs.get("policy")
    if policy is not None:
        if refused := SEARCH_POLICIES.refusal(policy, "policy"):
            raise ValueError(refused)
        settings.search.policy = policy
    path = Path(inputs["problem_path"]).expanduser()
    problem = load_problem(path)
    device = inputs.get("device") or "auto"
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device {device!r}: use auto, cpu or cuda")
    device = resolve_device(settings.device if device == "auto" else device)
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ValueError("device cuda, but no GPU is usable here (torch sees none); use device cpu")
    budgets = Budgets(max_iters=8 if inputs.get("max_iters") is None else inputs["max_iters"],  # 0 is refused
                      time_s=inputs.get("time_budget_s"), gpu_s=inputs.get("gpu_budget_s"),
                      usd=inputs.get("usd_budget") if inputs.get("usd_budget") is not None else settings.llm.budget_usd)
    spec = RunSpec(problem_path=path.resolve(), runs_dir=settings.runs_dir, run_id=run_id, device=device,
                   budgets=budgets, policy=settings.search.policy, model=settings.llm.model,
                   interactive=bool(inputs.get("interactive")), no_memory=bool(inputs.get("no_memory")),
                   no_profile=bool(inputs.get("no_profile")), studio=True)
    meter = UsageMeter.from_dict(usage, settings) if usage else UsageMeter(settings)
    return run_context(spec, settings, _run_files(spec, problem.name), meter, problem)


def _run_files(spec: RunSpec, problem_name: str) -> RunFiles:
    """The spec's run directory: opened again, with its ``run.json`` as the inputs now ask, when it exists; else a
    new one. Studio's server drives its runs through its own checkpointer, so no driver lock is taken here."""
    from kernelpro.runs.files import RunFiles, new_run_id

    meta = spec.run_meta(problem_name)
    if spec.run_id is not None and (Path(spec.runs_dir) / spec.run_id / "run.json").exists():
        files = RunFiles.open(spec.runs_dir, spec.run_id)
        files.update_meta(**meta)
        return files
    return RunFiles.create(spec.runs_dir, spec.run_id or new_run_id(f"studio-{problem_name}"), meta)
