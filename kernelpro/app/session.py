"""A run as one object: opened (or resumed) from its ``RunSpec``, streamed as typed events, finished into its
``RunOutcome``.

``open_or_resume`` holds the run directory (``run_claim.py``: made or opened again, its driver lock taken), opens
the SQLite checkpointer, compiles the optimisation graph and builds the run's context through
``app.compose.build_context``. ``Run.stream`` runs the graph and yields ``NodeUpdate``s, a ``Question`` where the
run waits for the user (the stream ends there; ``stream(answer)`` goes on) and at the end ``Ended``. Ctrl-C
(KeyboardInterrupt) inside the stream, or ``Run.stop`` for one outside it, ends the run as the user's stop:
stopped, resumable. Any other error ends it failed, with the error in ``Ended`` (the caller decides what a
storage error means). ``Run.finish`` closes the checkpointer and the judge and writes the outputs.

`kernelpro optimize` renders these events at the terminal; nothing here prints.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

from kernelpro.app.run_claim import RunClaim, create_run, reopen_run
from kernelpro.app.run_events import Ended, NodeUpdate, PastEnd, Question, RunEvent
from kernelpro.config import Settings
from kernelpro.graphs.context import OptimizeContext
from kernelpro.problem import Problem, load_problem
from kernelpro.runs.files import RunFiles
from kernelpro.runs.outcome import RunOutcome
from kernelpro.runs.spec import RunSpec

__all__ = ["Ended", "NO_ANSWER", "NodeUpdate", "PastEnd", "Question", "Run", "RunEvent", "RunSetupFailed",
           "open_or_resume", "run_context"]

NO_ANSWER: Any = object()
"""``Run.stream``'s answer when no question is pending."""


class RunSetupFailed(Exception):
    """The run's context could not be built (a search memory that cannot be opened, ...); its cause is chained."""


def run_context(spec: RunSpec, settings: Settings, files: RunFiles, meter: Any,
                problem: Problem | None = None) -> OptimizeContext:
    """The run's context (its judge, policy, models, tools, profiler, memory, gate), as the settings and the spec
    say, for the run directory ``files``; ``problem``: the spec's, when the caller has loaded it already."""
    from kernelpro.app.compose import build_context
    from kernelpro.app.devices import device_name
    from kernelpro.llm.models import llm_configured

    problem = problem if problem is not None else load_problem(spec.problem_path)
    return build_context(settings, problem, spec.device, device_name(spec.device), files,
                         budgets=spec.budgets, interactive=spec.interactive, use_llm=llm_configured(settings),
                         meter=meter, use_memory=not spec.no_memory, use_profiler=not spec.no_profile)


def open_or_resume(spec: RunSpec, settings: Settings, claim: RunClaim | None = None,
                   problem: Problem | None = None) -> Run:
    """The run ``spec`` asks for, ready to stream: ``claim`` when the caller holds its directory already, else
    the spec's run opened again when its directory exists, or made. ``settings`` become the run's (``spec.apply``);
    ``problem``: the spec's, when the caller has loaded it already. Raises ``RunNotFound``, ``RunBusy``,
    ``OSError`` (a directory the storage refuses) or ``RunSetupFailed``."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from kernelpro.graphs.optimize import builder
    from kernelpro.llm.models import UsageMeter

    problem = problem if problem is not None else load_problem(spec.problem_path)
    if claim is None:
        claim = _claim(spec, problem.name)
    spec.apply(settings)
    files = claim.files
    conn = None
    try:
        files.root.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(files.checkpoint, check_same_thread=False)
        graph = builder().compile(checkpointer=SqliteSaver(conn))
        config = {"configurable": {"thread_id": claim.run_id}, "recursion_limit": spec.budgets.recursion_limit}
        # a new run reads no checkpoint: its first write is the stream's, where a refused write is reported
        previous = graph.get_state(config).values if claim.resumed else {}
        meter = UsageMeter.from_dict(previous["usage"], settings) if previous.get("usage") else UsageMeter(settings)
        try:
            context = run_context(spec, settings, files, meter, problem)
        except Exception as error:
            raise RunSetupFailed(f"{type(error).__name__}: {error}") from error
    except BaseException:
        if conn is not None:
            conn.close()
        claim.release()
        raise
    return Run(spec, claim, conn, graph, config, context, previous)


def _claim(spec: RunSpec, problem_name: str) -> RunClaim:
    if spec.run_id is not None and (Path(spec.runs_dir) / spec.run_id / "run.json").exists():
        return reopen_run(spec.runs_dir, spec.run_id)
    return create_run(spec, problem_name)


class Run:
    """One run being driven by this process. Use it as a context manager: leaving it closes what ``finish`` has
    not (the checkpointer, the judge's workers) and releases the run's lock."""

    def __init__(self, spec: RunSpec, claim: RunClaim, conn: sqlite3.Connection, graph: Any,
                 config: dict[str, Any], context: OptimizeContext, previous: dict[str, Any]) -> None:
        self.spec, self.claim, self.graph, self.config, self.context = spec, claim, graph, config, context
        self.previous = previous
        """The state the run was resumed at (empty for a new run, or one killed before its first step)."""
        self.ended: Ended | None = None
        self._conn: sqlite3.Connection | None = conn
        # a run killed before its first step checkpointed starts from the beginning
        self._feed: Any = None if previous else {"run_id": claim.run_id}

    @property
    def run_id(self) -> str:
        return self.claim.run_id

    @property
    def files(self) -> RunFiles:
        return self.claim.files

    @property
    def resumed(self) -> bool:
        return self.claim.resumed

    @property
    def meter(self) -> Any:
        return self.context.meter

    def state(self) -> dict[str, Any]:
        return self.graph.get_state(self.config).values

    # ---- a run resumed after its end --------------------------------------------------------------------------

    def past_end(self, budgets_given: bool) -> PastEnd | None:
        """Whether a resumed run that had ended (stopped at a question, a budget spent, every candidate judged)
        goes on: when it was stopped, or budgets were given anew, and the budgets leave room. None when it had
        not ended."""
        from kernelpro.graphs.views import stop_reason

        if not (self.resumed and self.previous) or self.graph.get_state(self.config).next:
            return None
        state = self.previous
        if state.get("status") == "failed":  # the reference itself failed: no budget mends that
            return PastEnd("failed")
        spent = stop_reason(state, self.context)  # type: ignore[arg-type]
        if spent is not None or (state.get("status") != "stopped" and not budgets_given):
            return PastEnd("stays_ended", str(spent[0] if spent is not None else
                                              state.get("stop_reason") or state.get("status", "ended")))
        return PastEnd("goes_on", str(state.get("stop_reason") or "stopped"))

    def go_on(self, why: str) -> None:
        """Send a run that had ended back into its loop (``past_end`` said it goes on)."""
        from kernelpro.graphs.resume import go_on

        go_on(self.graph, self.config, f"the run had ended ({why})")

    # ---- streaming --------------------------------------------------------------------------------------------

    def stream(self, answer: Any = NO_ANSWER) -> Iterator[RunEvent]:
        """Run the graph on: each node's update, then a ``Question`` (call again with its ``answer``) or
        ``Ended``. KeyboardInterrupt inside ends the run as the user's stop; another error ends it failed."""
        from langgraph.types import Command

        if self.ended is not None:
            raise RuntimeError(f"run {self.run_id} has ended ({self.ended.status})")
        feed, self._feed = (self._feed if answer is NO_ANSWER else Command(resume=answer)), None
        try:
            for chunk in self.graph.stream(feed, self.config, context=self.context, stream_mode="updates",
                                           durability="sync"):
                for node, values in chunk.items():
                    if node != "__interrupt__":
                        yield NodeUpdate(node, values)
            snapshot = self.graph.get_state(self.config)
            if snapshot.interrupts:
                yield Question(snapshot.interrupts[0].value)
                return
            state = self.state()
            self.ended = Ended(state.get("status", "failed"), state)
        except KeyboardInterrupt:
            self.ended = Ended("stopped", self.state(), interrupted=True)
        except Exception as error:  # noqa: BLE001 - the run directory keeps everything judged so far
            self.ended = Ended("failed", {**self._state_or_empty(), "stop_reason": f"{type(error).__name__}: {error}"},
                               error=error)
        yield self.ended

    def stop(self) -> Ended:
        """The user stopped the run outside the stream (Ctrl-C at a question): stopped, resumable."""
        self.ended = Ended("stopped", self.state(), interrupted=True)
        return self.ended

    def _state_or_empty(self) -> dict[str, Any]:
        try:
            return self.state()
        except Exception:  # noqa: BLE001 - a checkpoint that cannot be read any more: the error says why
            return {}

    # ---- the end ----------------------------------------------------------------------------------------------

    def finish(self) -> RunOutcome:
        """Close the checkpointer and the judge, write the outputs (the best candidate, the report,
        ``summary.json``) and give the outcome. Raises the ``OSError`` of an output the storage refused."""
        from kernelpro.graphs.run_outputs import write_run_outcome

        if self.ended is None:
            raise RuntimeError(f"run {self.run_id} has not ended: stream it to its end, or stop it")
        self._close_workers()
        return write_run_outcome(self.files, self.ended.state, self.ended.status, self.context, self.meter)

    def _close_workers(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self.context.evaluate.close()  # stops the run's judging workers

    def close(self) -> None:
        self._close_workers()
        self.claim.release()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
