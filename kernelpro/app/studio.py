"""The composition root's part for LangGraph Studio's optimisation graph (``langgraph.json``: ``optimize``).

Studio sends plain JSON (``graphs.studio.StudioInput``); ``open_studio_run`` turns it into the run's real context
the way `kernelpro optimize` does (``kernelpro.app.compose.build_context``), and ``optimize_studio_graph`` is the graph
the server loads. The chat's Studio graph is ``kernelpro.app.compose.chat_studio_graph``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelpro.graphs.context import OptimizeContext


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
    ``run_id``'s opened again). Raises ValueError (or ProblemError) with what to fix."""
    import platform

    from kernelpro.app.compose import _device_name, build_context
    from kernelpro.config import load_settings
    from kernelpro.graphs.context import Budgets
    from kernelpro.harness.jobs import resolve_device
    from kernelpro.llm.models import UsageMeter, llm_configured
    from kernelpro.problem import load_problem
    from kernelpro.runs.files import RunFiles, new_run_id
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
    no_memory, no_profile = bool(inputs.get("no_memory")), bool(inputs.get("no_profile"))
    interactive = bool(inputs.get("interactive"))
    meta = {"problem_path": str(path.resolve()), "problem": problem.name, "device": device,
            "budgets": budgets.model_dump(), "interactive": interactive, "model": settings.llm.model,
            "no_memory": no_memory, "no_profile": no_profile, "search_policy": settings.search.policy, "studio": True}
    if run_id is not None and (Path(settings.runs_dir) / run_id / "run.json").exists():
        files = RunFiles.open(settings.runs_dir, run_id)
        files.update_meta(**meta)
    else:
        files = RunFiles.create(settings.runs_dir, run_id or new_run_id(f"studio-{problem.name}"), meta)
    meter = UsageMeter.from_dict(usage, settings) if usage else UsageMeter(settings)
    gpu = _device_name(device) if device == "cuda" else f"CPU ({platform.machine()})"
    return build_context(settings, problem, device, gpu, files, budgets=budgets, interactive=interactive,
                         use_llm=llm_configured(settings), meter=meter, use_memory=not no_memory,
                         use_profiler=not no_profile)
