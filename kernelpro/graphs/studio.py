"""The optimisation graph as LangGraph Studio runs it: plain JSON inputs, the run's context opened by the graph.

Studio (``langgraph dev``) can only send JSON, while the loop's context holds live objects (the judge's workers,
models, the run directory). So this graph takes ``StudioInput`` (the problem's path, the device, budgets, the
model, interactive) and its first node, ``open_run``, has ``open_context`` (``kernelpro.app.studio``, beside the
composition root) build the real ``OptimizeContext`` from them, kept per run id. Every other node is the
optimisation graph's own, handed that context; the coder branches (``Send``) carry the inputs too, so a server
restarted mid-run opens the same run directory again. After ``finish``, ``write_outputs`` writes what
`kernelpro optimize` writes at its end (``graphs.run_outputs.write_outputs``: ``best_candidate.py``, the report,
``summary.json``), puts the summary in the state and closes the run's judge. A node that raises writes them too,
with status failed and its error as the reason, before Studio shows the error.

    START -> open_run -> baseline -> ... the optimisation graph ... -> finish -> write_outputs -> END
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, Literal

from langgraph.errors import GraphBubbleUp
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send
from typing_extensions import Required, TypedDict

from kernelpro.graphs.context import OptimizeContext
from kernelpro.graphs.nodes import Ctx
from kernelpro.graphs.optimize import NODES
from kernelpro.graphs.run_outputs import write_outputs
from kernelpro.graphs.state import OptimizeState


class StudioInput(TypedDict, total=False):
    """What a Studio run is asked: every field plain JSON, the defaults those of `kernelpro optimize`."""

    problem_path: Required[str]  # a KernelBench-format problem file, relative to the server's directory
    device: Literal["auto", "cpu", "cuda"]  # default auto
    max_iters: int  # candidates judged (default 8)
    time_budget_s: float  # seconds of work, across resumes
    gpu_budget_s: float
    usd_budget: float  # LLM dollars (default llm.budget_usd)
    model: str  # a LiteLLM model for every agent; none configured runs the built-in recipes
    policy: str  # kernelpro.seams.SEARCH_POLICIES: auto (default), greedy, beam, mcts, recipes, or one registered
    interactive: bool  # each plan and candidate waits for approve, edit, skip or stop (an interrupt)
    no_memory: bool
    no_profile: bool


INPUT_KEYS = tuple(StudioInput.__annotations__)


class StudioState(OptimizeState, StudioInput, total=False):
    """The optimisation state with the run's inputs beside it (checkpointed, so a restarted server reopens it)."""

    outputs: dict[str, Any]  # at the end: the object `kernelpro optimize --json` prints (also summary.json)


OpenContext = Callable[[StudioInput, "str | None", "dict[str, Any] | None"], OptimizeContext]
"""``(inputs, run_id, usage)``: the run's context; a new run (and its directory) when ``run_id`` is None, else
the run directory ``run_id`` opened again, its meter continued from ``usage``."""


class StudioRuns:
    """The open runs' contexts by run id: one judge per run, closed when the run finishes."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context
        self._contexts: dict[str, OptimizeContext] = {}
        self._lock = threading.Lock()

    def open(self, state: dict[str, Any]) -> OptimizeContext:
        """A fresh context from the state's inputs (a new input on a thread may change budgets or the model)."""
        run_id = state.get("run_id")
        self.close(run_id)
        context = self.open_context(_inputs(state), run_id, state.get("usage"))
        with self._lock:
            self._contexts[context.files.root.name] = context
        return context

    def get(self, state: dict[str, Any]) -> OptimizeContext:
        run_id = state.get("run_id")
        if not run_id:
            raise RuntimeError("a node of the Studio graph ran before open_run gave the run its id")
        with self._lock:
            context = self._contexts.get(run_id)
            if context is None:  # the server restarted mid-run: the same run directory, opened again
                context = self._contexts[run_id] = self.open_context(_inputs(state), run_id, state.get("usage"))
            return context

    def close(self, run_id: str | None) -> None:
        with self._lock:
            context = self._contexts.pop(run_id, None) if run_id else None
        if context is not None:
            context.evaluate.close()


def _inputs(state: dict[str, Any]) -> StudioInput:
    if not state.get("problem_path"):
        raise ValueError("give problem_path: the KernelBench-format problem file to optimise (e.g. "
                         "tests/data/problems/repeated_relu.py)")
    return {key: state[key] for key in INPUT_KEYS if state.get(key) is not None}  # type: ignore[return-value]


def studio_builder(runs: StudioRuns) -> StateGraph:
    """The Studio graph: ``open_run`` first, then the optimisation graph's nodes with the context of the run
    (``runs`` outlives the graph: the server may build a graph per request, while a run's judge lives on)."""

    def open_run(state: StudioState) -> Command[Literal["baseline"]]:
        context = runs.open(dict(state))
        run_id = context.files.root.name
        return Command(goto="baseline", update={"run_id": run_id, "events": [
            f"open_run: run {run_id} in {context.files.root} ({context.device}, "
            f"{'a model' if context.uses_llm else 'the built-in recipes'}, max_iters {context.budgets.max_iters}"
            f"{', interactive' if context.interactive else ''})"]})

    def outputs(state: StudioState) -> Command[Literal["__end__"]]:
        context = runs.get(dict(state))
        try:
            written = write_outputs(context.files, dict(state), state.get("status", "failed"), context, context.meter)
        finally:
            runs.close(state.get("run_id"))
        return Command(goto=END, update={"outputs": written, "events": [
            f"write_outputs: {written['best_candidate']}, report {written['report']}, summary {written['summary']}"]})

    graph = StateGraph(StudioState, input_schema=StudioInput)
    graph.add_node("open_run", open_run)
    for name, fn in NODES:
        # every node reads the whole state (its own annotation says OptimizeState, which would leave the inputs out)
        graph.add_node(name, _with_context(name, fn, runs), input_schema=StudioState,
                       **({"destinations": ("write_outputs",)} if name == "finish" else {}))
    graph.add_node("write_outputs", outputs)
    graph.add_edge(START, "open_run")
    graph.add_edge("code", "review_code")
    return graph


def _with_context(name: str, fn: Callable[..., Any], runs: StudioRuns) -> Callable[..., Any]:
    """The node, run with the context of the state's run; ``select``'s coder branches get the run's inputs and
    id; ``finish`` goes on to ``write_outputs`` instead of ending."""

    @functools.wraps(fn)
    def with_context(state: dict[str, Any], runtime: Ctx) -> Any:
        try:
            result = fn(state, runtime.override(context=runs.get(state)))
        except GraphBubbleUp:  # an interrupt (interactive mode) or a command for the parent: not a failure
            raise
        except Exception as error:
            _write_failed(runs, state, name, error)
            raise
        if name == "select" and isinstance(result, Command) and isinstance(result.goto, list):
            carried = {key: state[key] for key in ("run_id", *INPUT_KEYS) if key in state}
            result = Command(goto=[Send(s.node, {**s.arg, **carried}) if isinstance(s, Send) else s
                                   for s in result.goto], update=result.update, graph=result.graph)
        if name == "finish" and isinstance(result, Command):
            result = Command(goto="write_outputs", update=result.update, graph=result.graph)
        return result

    return with_context


def _write_failed(runs: StudioRuns, state: dict[str, Any], name: str, error: Exception) -> None:
    """What `kernelpro optimize` leaves when its run fails: the files of what was judged so far, status failed and
    the error as the reason; then the run's judge is closed (a resumed thread opens it again). Never in the way
    of the error itself, which Studio shows."""
    run_id = state.get("run_id")
    if not run_id:
        return
    try:
        context = runs.get(state)
        failed = {**state, "stop_reason": f"{name} failed: {type(error).__name__}: {error}"}
        write_outputs(context.files, failed, "failed", context, context.meter)
    except Exception:  # noqa: BLE001, S110 - the node's own error is the one to report
        pass
    finally:
        runs.close(run_id)
