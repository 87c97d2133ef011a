"""`kernelpro optimize`: the run's options read and checked, its ``RunSpec`` built (``optimize_spec.py``), the run
driven through its session (``app/session.py``) and its events rendered at the terminal (``optimize_terminal.py``).

Part of the command-line layer: it prints, and turns what went wrong into one error line and an exit status.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from kernelpro.cli.errors import cannot_write_run, storage_error
from kernelpro.cli.errors import fail as _fail
from kernelpro.cli.inputs import (
    CorrectnessOption,
    ScorecardOption,
    budgets_or_fail,
    judged_before_or_fail,
    releases_run_locks,
)
from kernelpro.cli.optimize_terminal import Progress, ask_user, editor_in_use
from kernelpro.config import Settings, load_settings
from kernelpro.exit_codes import BAD_INPUT, FAILED, INTERRUPTED, NO_IMPROVEMENT, OK, SETUP_FAILED
from kernelpro.problem import Problem

if TYPE_CHECKING:
    from kernelpro.app.run_claim import RunClaim
    from kernelpro.app.session import Ended, Run
    from kernelpro.runs.outcome import RunOutcome
    from kernelpro.runs.spec import RunSpec

NO_LLM_NOTICE = (
    "No language model is configured, so kernelpro runs its built-in recipes {recipes}. To let the agents write "
    "kernels, configure a model, e.g.\n"
    "  export KERNELPRO_LLM__MODEL=anthropic/claude-sonnet-4-5      (and ANTHROPIC_API_KEY)\n"
    "  export KERNELPRO_LLM__MODEL=openai/gpt-5                      (and OPENAI_API_KEY)\n"
    "  export KERNELPRO_LLM__MODEL=openai/<served-name> KERNELPRO_LLM__API_BASE=http://localhost:8000/v1   (vLLM)\n"
    "  export KERNELPRO_LLM__MODEL=ollama/qwen2.5-coder              (Ollama)\n"
    "or pass --model."
)


def run_optimize(reference: Optional[Path], device: str, model: Optional[str], max_iters: Optional[int],
                 time_budget: Optional[str], gpu_budget: Optional[str], usd_budget: Optional[float],
                 runs_dir: Optional[Path], interactive: bool, resume: Optional[str], as_json: bool,
                 no_memory: bool, no_profile: bool, policy: Optional[str] = None,
                 run_id: Optional[str] = None, objective: Optional[str] = None,
                 judged_before: Optional[Path] = None, baselines: Optional[str] = None, fresh: bool = False,
                 correctness: Optional[str] = None, scorecard: Optional[str] = None) -> None:
    from kernelpro.cli.optimize_baselines import baseline_names
    from kernelpro.cli.optimize_spec import created_or_fail, new_spec, reopened_or_fail, resumed_spec
    from kernelpro.run_stack import run_stack_problem

    given = budgets_or_fail(max_iters, time_budget, gpu_budget, usd_budget)
    settings = load_settings()
    if model:
        settings.llm.model = model
    if fresh:
        settings.cache.baselines = "fresh"
    # before a run directory is made: every run here would fail alike
    if problem := run_stack_problem(with_model=bool(settings.llm.model)):
        _fail(f"could not set up the run: {problem}", code=SETUP_FAILED)
    out = Console(stderr=True) if as_json else Console()
    if policy is not None:
        from kernelpro.seams import SEARCH_POLICIES

        if refused := SEARCH_POLICIES.refusal(policy, "--policy"):
            _fail(refused)
        settings.search.policy = policy  # type: ignore[assignment]
    runs_dir = runs_dir or settings.runs_dir
    judged_before_or_fail(judged_before, resume)  # a bad file is refused before a run directory is made
    baselines_given = baseline_names(baselines)
    flags = {"interactive": interactive, "no_memory": no_memory, "no_profile": no_profile}
    if resume:
        with reopened_or_fail(runs_dir, resume) as claim:
            spec, problem, budgets_given = resumed_spec(claim, settings, given, flags, model, policy, objective,
                                                        correctness, scorecard, device, baselines_given)
            _optimize(out, spec, settings, problem, claim, as_json, budgets_given, spec.problem_path)
        return
    if reference is None:
        _fail("give a problem file, or --resume RUN_ID")
    spec, problem = new_spec(reference, settings, given, flags, objective, correctness, scorecard, device, run_id,
                             runs_dir, judged_before, baselines_given)
    with created_or_fail(spec, problem) as claim:
        _optimize(out, spec, settings, problem, claim, as_json, False, reference)


def _optimize(out: Console, spec: RunSpec, settings: Settings, problem: Problem, claim: RunClaim, as_json: bool,
              budgets_given: bool, reference: Path) -> None:
    """Drive the held run to its end and say how it ended (``reference``: the problem file as it was given);
    exits with the run's status."""
    from kernelpro.app.session import RunSetupFailed, open_or_resume
    from kernelpro.cli.optimize_baselines import judge_run_baselines
    from kernelpro.llm.models import llm_configured

    run_id = claim.run_id
    spec = spec.model_copy(update={"run_id": run_id})  # a new run's id, made as its directory was
    if not llm_configured(settings):
        from kernelpro.recipes.catalogue import recipes_notice

        what = recipes_notice(problem, spec.device, profiled=spec.device == "cuda" and not spec.no_profile,
                              remembered=not spec.no_memory, tolerances=settings.harness.tolerances)
        out.print(f"[yellow]{escape(NO_LLM_NOTICE.format(recipes=what))}[/]", soft_wrap=True)
    try:
        run = open_or_resume(spec, settings, claim, problem)
    except RunSetupFailed as error:  # e.g. a search memory that cannot be opened
        _fail(f"could not set up the run ({error}); fix it and continue with: kernelpro optimize --resume {run_id}",
              code=SETUP_FAILED)
    with run:
        context = run.context
        out.print(f"run [bold]{run_id}[/] in {run.files.root}" + (" (resumed)" if run.resumed else ""),
                  soft_wrap=True)
        if context.uses_llm and context.tool_calling:
            out.print(f"agents call tools by {escape(context.tool_calling)}", soft_wrap=True)
        if forecaster_calling := getattr(getattr(context.gate, "forecaster", None), "tool_calling", ""):
            out.print(f"the forecaster calls tools by {escape(forecaster_calling)}", soft_wrap=True)
        judge_run_baselines(out, context, run.files, spec.baselines, settings, spec.device)
        progress = Progress(out, spec.budgets.max_iters, spec.device, run.previous)
        _resume_past_end(out, run, budgets_given)
        ended = _drive(out, run, progress)
        if ended.interrupted:
            out.print(f"stopped; resume with: kernelpro optimize --resume {run_id}")
        elif ended.error is not None:
            if (refused := storage_error(ended.error, run.files.checkpoint)) is not None:
                _fail(cannot_write_run(refused, run_id), code=FAILED)  # the outputs could not be written
            out.print(f"[bold red]the run failed:[/] {escape(f'{type(ended.error).__name__}: {ended.error}')}; "
                      f"what was judged is kept in {run.files.root}; resume with: kernelpro optimize --resume "
                      f"{run_id}")
        try:
            outcome = run.finish()
        except Exception as error:
            if (refused := storage_error(error)) is None:
                raise
            _fail(cannot_write_run(refused, run_id), code=FAILED)  # each output is whole or absent: none is half
        _said_at_the_end(out, outcome, ended, run_id, as_json, reference)


def _resume_past_end(out: Console, run: Run, budgets_given: bool) -> None:
    """A resumed run that had ended goes on, or says why it cannot and how to give it more."""
    past = run.past_end(budgets_given)
    if past is None or past.kind == "failed":
        return
    if past.kind == "stays_ended":
        out.print(f"run {run.run_id} ended ({escape(past.why)}); to go on, resume it with a larger budget: "
                  f"kernelpro optimize --resume {run.run_id} --max-iters N (or --time-budget, --gpu-budget, "
                  "--usd-budget)", soft_wrap=True)
        return
    out.print(f"run {run.run_id} had ended ({escape(past.why)}); it goes on", soft_wrap=True)
    run.go_on(past.why)


def _drive(out: Console, run: Run, progress: Progress) -> Ended:
    """The run streamed to its end: a line per step, each question asked here; Ctrl-C at a question stops it."""
    from kernelpro.app.session import NO_ANSWER, NodeUpdate, Question

    answer: Any = NO_ANSWER
    try:
        while True:
            question = None
            for event in run.stream(answer):
                if isinstance(event, NodeUpdate):
                    progress.update(event.node, event.values)
                elif isinstance(event, Question):
                    question = event
                else:
                    return event
            assert question is not None  # a stream ends at a question or at the run's end
            answer = ask_user(out, question.request, editor_in_use())
    except KeyboardInterrupt:
        return run.stop()


def _said_at_the_end(out: Console, outcome: RunOutcome, ended: Ended, run_id: str, as_json: bool,
                     reference: Path) -> None:
    """The run's last line (or --json's object), then its exit status."""
    state, status = ended.state, ended.status
    by_user = ended.stopped_by_user
    # Ctrl-C said how to go on as it stopped; a stop at a prompt says it here
    resume_hint = f"; resume with: kernelpro optimize --resume {run_id}" if by_user and not ended.interrupted else ""
    if as_json:
        print(json.dumps(outcome.to_json()))
    elif state.get("reference_error") or state.get("too_big"):
        pass  # the error line below says it all
    elif outcome.improved:
        from kernelpro.search.tree import speedup_text

        out.print(f"[bold]{status}[/]: best speedup [bold green]"
                  f"{speedup_text(outcome.best_speedup, outcome.best_speedup_ci95)}[/] "
                  f"({outcome.best_variant}, {outcome.best_candidate}){resume_hint}; report: "
                  f"{outcome.report}", soft_wrap=True)
    elif status == "stopped" and not outcome.candidates_judged:
        out.print(f"[bold]stopped[/] before any candidate was judged{resume_hint}; report: {outcome.report}",
                  soft_wrap=True)
    else:
        out.print(f"[bold]{status}[/]: [bold yellow]no improvement: keep the reference[/] "
                  f"({outcome.no_improvement_reason}){resume_hint}; report: {outcome.report}", soft_wrap=True)
    if state.get("too_big"):  # unusable here: no candidate can be judged within this machine's memory
        _fail(f"too big for this machine: {state['too_big']}; then start a new run", code=BAD_INPUT)
    if state.get("reference_error"):  # unusable input, not a run to resume: nothing is judged against it
        _fail(f"the reference {reference} fails, so no candidate can be judged against it: "
              f"{state['reference_error']}; fix the problem file and start a new run", code=BAD_INPUT)
    code = exit_code(status, outcome.improved, by_user)
    if code != OK:
        raise typer.Exit(code=code)


def exit_code(status: str, improved: bool, stopped_by_user: bool) -> int:
    """A run's exit status: stopped by the user (resumable), failed (resumable), or ended (every candidate judged
    or a budget spent) with or without an improvement."""
    if stopped_by_user:
        return INTERRUPTED
    if status == "failed":
        return FAILED
    return OK if improved else NO_IMPROVEMENT


def register(app: typer.Typer) -> None:
    @app.command("optimize")
    @releases_run_locks
    def optimize(
        reference: Annotated[Optional[Path], typer.Argument(help="KernelBench-format problem file.")] = None,
        device: Annotated[str, typer.Option(help="cpu, cuda, or auto.")] = "auto",
        model: Annotated[Optional[str], typer.Option(help="LiteLLM model for every agent, e.g. "
                                                          "anthropic/claude-sonnet-4-5.")] = None,
        max_iters: Annotated[Optional[int], typer.Option(
            "--max-iters", help="Candidates to judge (default 8); one answered from a verdict taken before the run "
                                "(--judged-before) is not counted.")] = None,
        time_budget: Annotated[Optional[str], typer.Option("--time-budget", help="e.g. 30m, 2h.")] = None,
        gpu_budget: Annotated[Optional[str], typer.Option("--gpu-budget", help="GPU time, e.g. 10m.")] = None,
        usd_budget: Annotated[Optional[float], typer.Option("--usd-budget", help="LLM dollars per run.")] = None,
        runs_dir: Annotated[Optional[Path], typer.Option("--runs-dir", help="Where run directories go.")] = None,
        interactive: Annotated[bool, typer.Option("--interactive", help="Approve or edit each plan and "
                                                                        "candidate.")] = False,
        resume: Annotated[Optional[str], typer.Option("--resume", help="Continue the run with this id.")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Progress to stderr; the last stdout line is one "
                                                             "JSON object.")] = False,
        no_memory: Annotated[bool, typer.Option("--no-memory", help="Neither read nor write the search "
                                                                    "memory.")] = False,
        no_profile: Annotated[bool, typer.Option("--no-profile", help="Skip Nsight Compute profiles.")] = False,
        policy: Annotated[Optional[str], typer.Option("--policy", help="Search policy: auto (mcts with a model, "
                                                      "recipes without), greedy, beam, mcts or recipes.")] = None,
        run_id: Annotated[Optional[str], typer.Option("--run-id", help="The new run's id (default: made from the "
                                                      "time and the problem's name).")] = None,
        objective: Annotated[Optional[str], typer.Option("--objective", help="What the search optimises: time "
                                                         "(default), energy or edp (energy x time; both need a "
                                                         "GPU's NVML energy counter).")] = None,
        judged_before: Annotated[Optional[Path], typer.Option("--judged-before", help="JSON lines of verdicts this "
                                                              "judge took on this problem before (a suite's "
                                                              "baselines): the same code is not judged again.")]
        = None,
        baselines: Annotated[Optional[str], typer.Option("--baselines", help="Comma-separated torch.compile "
                                                         "baselines to judge first, as a suite does "
                                                         "(compile_default, compile_max_autotune_no_cudagraphs): "
                                                         "their verdicts answer the same code in the run, and "
                                                         "--json's object gives them.")] = None,
        fresh: Annotated[bool, typer.Option("--fresh", help="Judge the --baselines anew rather than reuse the "
                                                            "verdicts kept in the cache (the new ones are kept).")]
        = False,
        correctness: Annotated[Optional[str], CorrectnessOption] = None,
        scorecard: Annotated[Optional[str], ScorecardOption] = None,
    ) -> None:
        """Make a PyTorch reference faster: plan, code, judge, profile, critique, remember, repeat."""
        if reference is None and resume is None:
            _fail("give a problem file, or --resume RUN_ID")
        run_optimize(reference, device, model, max_iters, time_budget, gpu_budget, usd_budget, runs_dir,
                     interactive, resume, as_json, no_memory, no_profile, policy, run_id, objective, judged_before,
                     baselines, fresh, correctness, scorecard)


__all__ = ["register", "run_optimize"]
