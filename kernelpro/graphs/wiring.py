"""Build the optimisation graph's context from the settings: models, tools per agent, judge, profiler, memory."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelpro.config import Settings
from kernelpro.graphs.context import Budgets, OptimizeContext, ProfileReport
from kernelpro.graphs.run_files import RunFiles
from kernelpro.harness.judge import precheck
from kernelpro.harness.result import EvalResult
from kernelpro.problem import Problem
from kernelpro.search.policy import BestFirst
from kernelpro.tools.registry import ToolContext, tools_by_name

ROLES = ("planner", "coder", "profiler_interpreter", "critic")
# What each agent may call. The judge is the graph's job, never an agent's: the coder checks that code
# compiles; it does not get to time its own candidates.
ROLE_TOOLS = {
    "planner": ("memory_search", "gpu_specs"),
    "coder": ("compile_check", "resource_report", "cutlass_search", "cutlass_definition", "cutlass_usages",
              "cutlass_read", "cutlass_list", "cutlass_examples", "memory_search"),
    "profiler_interpreter": ("read_metrics", "gpu_specs", "resource_report"),
    "critic": ("memory_search",),
}


class SearchMemory:
    """The search memory as the graph uses it: related lessons in, attempts and insights out."""

    def __init__(self, settings: Settings, gpu: str) -> None:
        from kernelpro.memory import MemoryStore

        self.store = MemoryStore(settings.memory)
        self.gpu = gpu

    def lessons(self, problem: Problem, query: str) -> str:
        from kernelpro.memory import MemoryStoreError, ProblemSignature, retrieve

        try:
            found = retrieve(self.store, f"{problem.name}\n{problem.source[:1500]}", query,
                             problem=ProblemSignature.from_problem(problem), gpu=self.gpu)
        except MemoryStoreError as error:  # the memory is an aid: a planner without lessons still plans
            return f"(the search memory could not be read: {error})"
        return found.render()

    def remember(self, records: Sequence[Any]) -> int:
        return self.store.add_many(records)


def candidate_checks(settings: Settings):
    """What the coder must fix before its candidate is judged: static guard rejections and compile errors."""
    from kernelpro.harness.compile_ahead import compile_ahead

    def check(source: str) -> list[str]:
        found = precheck(source)
        if isinstance(found, EvalResult):
            return [f"{found.status}/{found.reason}: {found.message}"]
        problems = [f"rejected ({f.reason}, line {f.line}): {f.message}" for f in found if f.severity == "reject"]
        if problems:
            return problems
        return [f"CUDA compile error ({r.backend}):\n{r.message}" for r in compile_ahead([source], settings.compile)[0]
                if r.failure == "compile"]

    return check


class RunEvaluator:
    """The judge for one optimisation run: one pipeline, so its long-lived worker per GPU serves every candidate
    of the run instead of starting anew for each. Opened on first use; `close()` stops the workers."""

    def __init__(self, settings: Settings, device: str) -> None:
        self.settings, self.device = settings, device
        self._pipeline: Any = None
        self._closed_stats: Any = None

    def __call__(self, problem: Problem, source: str) -> EvalResult:
        from kernelpro.harness.pipeline import Pipeline

        if self._pipeline is None:
            self._pipeline = Pipeline(self.device, self.settings)
        return self._pipeline.judge([(problem, source)])[0]

    def rejudge(self, problem: Problem, sources: Sequence[str]) -> list[EvalResult]:
        """The finalists judged again, head to head with the reference, in one new worker with more rounds
        (``search.finalist_rounds_factor``), so the run's best does not rest on one judgment's noise."""
        from kernelpro.harness.pipeline import Pipeline

        if not sources:
            return []
        self.close()  # the run's worker gives its GPU memory back first; it restarts if the run judges again
        settings = self.settings.for_finalists()
        pipeline = Pipeline(self.device, settings)
        try:
            return pipeline.judge([(problem, source) for source in sources])
        finally:
            pipeline.close()

    @property
    def stats(self) -> Any:
        """The pipeline's counts (judged, worker starts, restarts and why), kept once it is closed; None before the
        first candidate."""
        return self._pipeline.stats if self._pipeline is not None else self._closed_stats

    def close(self) -> None:
        if self._pipeline is not None:
            self._closed_stats = self._pipeline.stats
            self._pipeline.close()
            self._pipeline = None


def evaluator(settings: Settings, device: str) -> RunEvaluator:
    return RunEvaluator(settings, device)


def profiler(files: RunFiles, tool_context: ToolContext | None = None):
    """Nsight Compute through the micro-profiling tools; None when it could not measure (no ncu, no permission)."""
    import time

    from kernelpro.tools.profiling.service import profile_and_diagnose

    count = iter(range(1_000_000))

    def profile(problem: Problem, source: str | None) -> ProfileReport | None:
        start = time.monotonic()
        workdir = files.root / "profiles" / f"p{next(count)}"
        try:
            profiled = profile_and_diagnose(problem.source, source, device="cuda", workdir=workdir)
        except Exception as error:  # noqa: BLE001 - a profile is evidence, not a verdict: the run goes on without it
            workdir.mkdir(parents=True, exist_ok=True)
            (workdir / "error.txt").write_text(f"{type(error).__name__}: {error}\n")
            return None
        if profiled.diagnosis is None:
            return None
        if tool_context is not None and profiled.profile.csv_path:
            tool_context.latest_profile = Path(profiled.profile.csv_path)
        return ProfileReport(text=profiled.render(), finding_ids=profiled.finding_ids, headline=profiled.headline,
                             gpu_s=time.monotonic() - start, data=profiled.diagnosis.to_dict())

    return profile


def build_context(settings: Settings, problem: Problem, device: str, gpu: str, files: RunFiles, *,
                  budgets: Budgets, interactive: bool = False, use_llm: bool = True, meter: Any = None,
                  use_memory: bool = True, use_profiler: bool = True) -> OptimizeContext:
    from kernelpro.llm import chat_model, llm_configured

    models = None
    tools: dict[str, list] = {}
    tool_context = ToolContext(settings=settings, problem=problem, device=device, run_id=files.root.name, gpu=gpu)
    if use_llm and llm_configured(settings):
        models = {role: chat_model(settings, role, meter=meter) for role in ROLES}
        available = tools_by_name(tool_context)
        tools = {role: [available[name] for name in names if name in available]
                 for role, names in ROLE_TOOLS.items()}
    memory = None
    if use_memory:
        memory = SearchMemory(settings, gpu)
    return OptimizeContext(
        settings=settings, problem=problem, device=device, gpu=gpu, files=files, policy=BestFirst(),
        evaluate=evaluator(settings, device), budgets=budgets, models=models, meter=meter,
        profile=profiler(files, tool_context) if use_profiler and device == "cuda" else None, memory=memory,
        tools=tools, tool_mode=settings.llm.tool_calling, interactive=interactive,
        checks=candidate_checks(settings),
    )
