"""The composition root: builds an optimisation run from the settings, by name, and nothing else does.

Which search policy (``search.policy``), which judge (``harness.backend``), which profiler, which memory, which
models and which tools each agent may call are decided here (the names through ``kernelpro.seams``); the graph
sees only the ports of ``harness.ports``. A run's session (``app/session.py``) calls ``build_context``, a chat
thread's set-up (``app/chat_thread.py``) ``build_chat_session``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelpro.config import Settings
from kernelpro.graphs.context import Budgets, OptimizeContext
from kernelpro.harness.judge import precheck
from kernelpro.harness.ports import Evaluator, Profiler, ProfileReport
from kernelpro.harness.result import EvalResult
from kernelpro.problem import Problem
from kernelpro.runs.files import RunFiles
from kernelpro.seams import JUDGES
from kernelpro.search.policies import build_policy
from kernelpro.tools.registry import ToolContext, tools_by_name

if TYPE_CHECKING:
    from kernelpro.chat.files import ChatFiles
    from kernelpro.chat.session import ChatBudgets, ChatSession

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
    """The search memory as the loop uses it (the ``Memory`` port): lessons in, attempts out, technique scores."""

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

    def technique_scores(self, problem: Problem, k: int = 40) -> dict[str, float]:
        """Technique tag -> the mean outcome of the related attempts that used it (+1 faster, -1 failed or
        slower, 0 neither), weighted by similarity, over the ``k`` attempts most similar to the problem."""
        from kernelpro.memory import MemoryFilter

        hits = self.store.search(f"{problem.name}\n{problem.source[:1500]}", MemoryFilter(kind="attempt"), k=k)
        totals: dict[str, list[float]] = {}
        for hit in hits:
            record = hit.record
            outcome = 1.0 if record.succeeded else (-1.0 if record.outcome != "ok" or record.speed_verdict ==
                                                     "slower" else 0.0)
            for tag in getattr(record, "tags", []) or []:
                weight, score = totals.setdefault(tag, [0.0, 0.0])
                totals[tag] = [weight + hit.score, score + hit.score * outcome]
        return {tag: score / weight for tag, (weight, score) in totals.items() if weight > 0}


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


def evaluator(settings: Settings, device: str) -> Evaluator:
    """The judge ``harness.backend`` names (``kernelpro.seams.JUDGES``)."""
    return JUDGES.build(settings.harness.backend, settings, device)


def profiler(files: RunFiles, tool_context: ToolContext | None = None) -> Profiler:
    """Nsight Compute through the micro-profiling tools; None when it could not measure (no ncu, no permission)."""
    from kernelpro.profiling.service import profile_and_diagnose

    count = iter(range(1_000_000))

    def profile(problem: Problem, source: str | None) -> ProfileReport | None:
        start = time.monotonic()
        workdir = files.root / "profiles" / f"p{next(count)}"
        try:
            profiled = profile_and_diagnose(problem.source, source, device="cuda", workdir=workdir,
                                            lock=tool_context.settings.harness if tool_context else None)
        except Exception as error:  # noqa: BLE001 - a profile is evidence, not a verdict: the run goes on without it
            workdir.mkdir(parents=True, exist_ok=True)
            (workdir / "error.txt").write_text(f"{type(error).__name__}: {error}\n")
            return ProfileReport(text="", finding_ids=[], headline="no profile", gpu_s=time.monotonic() - start,
                                 missing=f"the profiler failed ({type(error).__name__}: {str(error)[:300]})")
        if profiled.diagnosis is None:
            why = profiled.profile.error or "Nsight Compute saw no kernel it could profile"
            return ProfileReport(text="", finding_ids=[], headline="no profile", gpu_s=time.monotonic() - start,
                                 missing=f"not profiled: {why[:300]}")
        if tool_context is not None and profiled.profile.csv_path:
            tool_context.latest_profile = Path(profiled.profile.csv_path)
        return ProfileReport(text=profiled.render(), finding_ids=profiled.finding_ids, headline=profiled.headline,
                             gpu_s=time.monotonic() - start, data=profiled.diagnosis.to_dict())

    return profile


def build_context(settings: Settings, problem: Problem, device: str, gpu: str, files: RunFiles, *,
                  budgets: Budgets, interactive: bool = False, use_llm: bool = True, meter: Any = None,
                  use_memory: bool = True, use_profiler: bool = True) -> OptimizeContext:
    """The run's context: models and tools when a model is configured, the policy and judge by name, the
    profiler on a GPU, the memory unless it is off. The tools judge through the run's own evaluator."""
    from kernelpro.app.forecast import build_gate
    from kernelpro.llm.models import chat_model, llm_configured

    judge = evaluator(settings, device)
    from kernelpro.llm.probe import ToolCalling
    from kernelpro.llm.probe import resolve as resolve_tool_calling

    models = None
    calling = ToolCalling(settings.llm.tool_calling, "")
    tools: dict[str, list] = {}
    tool_context = ToolContext(settings=settings, problem=problem, device=device, run_id=files.root.name, gpu=gpu,
                               evaluator=judge)
    if use_llm and llm_configured(settings):
        models = {role: chat_model(settings, role, meter=meter) for role in ROLES}
        calling = resolve_tool_calling(settings.llm.tool_calling, models)
        available = tools_by_name(tool_context)
        tools = {role: [available[name] for name in names if name in available]
                 for role, names in ROLE_TOOLS.items()}
    return OptimizeContext(
        settings=settings, problem=problem, device=device, gpu=gpu, files=files,
        policy=build_policy(settings.search.policy, settings.search, uses_llm=models is not None),
        evaluate=judge, budgets=budgets, models=models, meter=meter,
        profile=profiler(files, tool_context) if use_profiler and device == "cuda" else None,
        memory=SearchMemory(settings, gpu) if use_memory else None,
        tools=tools, tool_mode=calling.mode, tool_calling=calling.why, interactive=interactive,
        checks=candidate_checks(settings), gate=build_gate(settings, gpu if device == "cuda" else "cpu", meter),
    )


def tool_session(settings: Settings, device: str, problem: Problem | None = None, *, gpu: str | None = None,
                 run_id: str = "mcp") -> ToolContext:
    """The tools of a session outside a run (the MCP server): every tool bound to one long-lived judge, the one
    ``harness.backend`` names, so judging a candidate reuses the session's worker. ``close()`` it at the end
    through ``context.evaluator``."""
    return ToolContext(settings=settings, problem=problem, device=device, run_id=run_id, gpu=gpu,
                       evaluator=evaluator(settings, device))


def build_chat_session(settings: Settings, problem: Problem, reference_path: Path, device: str, gpu: str,
                       files: ChatFiles, *, budgets: ChatBudgets | None = None, meter: Any = None,
                       model: Any = None) -> ChatSession:
    """A chat's session: the whole tool catalogue (on any device: compiling, the static report and the CUTLASS
    browser need no GPU; the profiler falls back to torch.profiler) bound to one judge for the whole chat, the
    chat's own ``write_candidate``, and the model when one is configured (``model`` stands in for it in tests)."""
    from kernelpro.chat.graph import StopOnCancel
    from kernelpro.chat.session import ChatBudgets, ChatSession
    from kernelpro.chat.tools import chat_tools
    from kernelpro.llm.models import chat_model, llm_configured
    from kernelpro.tools.registry import build_tools

    judge = evaluator(settings, device)
    tool_context = ToolContext(settings=settings, problem=problem, device=device, run_id=files.thread_id, gpu=gpu,
                               evaluator=judge)
    tool_context.backend("profile_dir", lambda: files.root / "profiles")
    if model is None and llm_configured(settings):
        model = chat_model(settings, "chat", meter=meter)
    elif model is not None and meter is not None and meter not in (model.callbacks or []):
        model.callbacks = [*(model.callbacks or []), meter]  # a stand-in model is metered like a real one
    session = ChatSession(settings=settings, problem=problem, reference_path=Path(reference_path), device=device,
                          gpu=gpu, files=files, evaluator=judge, tool_context=tool_context, model=model, meter=meter,
                          budgets=budgets or ChatBudgets(usd=settings.llm.budget_usd))
    if model is not None:  # Ctrl-C ends a streamed reply at its next token
        from kernelpro.llm.probe import for_chat

        session.tool_calling = for_chat(settings.llm.tool_calling, model).why  # LiteLLM's word, or one probe
        model.callbacks = [*(model.callbacks or []), StopOnCancel()]
    tools = build_tools(tool_context, every_device=True) + chat_tools(session)
    session.tools = {tool.name: tool for tool in tools}
    return session


def chat_studio_graph(config: Any = None) -> Any:
    """The chat graph for LangGraph Studio (``langgraph.json``): a session opened on first use from the settings,
    on ``chat.reference`` (``KERNELPRO_CHAT__REFERENCE``), in a thread directory of its own."""
    from kernelpro.chat.graph import builder

    return builder(default_session=_studio_session).compile()


@functools.cache  # one session, so one judge, for every Studio run of this server
def _studio_session() -> ChatSession:
    from kernelpro.app.chat_thread import create_thread, thread_session
    from kernelpro.config import load_settings
    from kernelpro.llm.models import UsageMeter

    settings = load_settings()
    if settings.chat.reference is None:
        raise ValueError("set KERNELPRO_CHAT__REFERENCE to the problem file the chat in LangGraph Studio is about")
    files = create_thread(settings, settings.chat.reference, id_prefix="studio-", meta={"studio": True})
    session = thread_session(settings, files, meter=UsageMeter(settings))
    if session.tool_calling:  # once per server: this session serves every Studio run
        logging.getLogger(__name__).info("the chat calls tools by %s", session.tool_calling)
    return session
