"""`kernelpro optimize`: run, stream, steer and resume the optimisation graph; write the outputs at the end.

Part of the command-line layer: it chooses the run directory, opens the SQLite checkpointer and prints.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape

from kernelpro.cli.errors import cannot_write, cannot_write_run, storage_error
from kernelpro.cli.errors import fail as _fail
from kernelpro.cli.inputs import (
    CorrectnessOption,
    ScorecardOption,
    budgets_or_fail,
    correctness_or_fail,
    device_or_fail,
    gpu_name,
    hold_run_lock,
    judged_before_or_fail,
    objective_or_fail,
    problem_or_fail,
    releases_run_locks,
    scorecard_or_fail,
)
from kernelpro.cli.optimize_terminal import Progress, ask_user, editor_in_use
from kernelpro.config import load_settings
from kernelpro.exit_codes import BAD_INPUT, FAILED, INTERRUPTED, NO_IMPROVEMENT, OK, SETUP_FAILED
from kernelpro.graphs.run_outputs import write_outputs

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
    from kernelpro.cli.optimize_baselines import baseline_names, judge_run_baselines, wanted_by_run
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
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.types import Command

    from kernelpro.app.compose import build_context
    from kernelpro.graphs.context import Budgets
    from kernelpro.graphs.optimize import builder
    from kernelpro.graphs.resume import go_on
    from kernelpro.llm.models import UsageMeter, llm_configured
    from kernelpro.runs.files import RunFiles, RunNotFound, new_run_id

    out = Console(stderr=True) if as_json else Console()
    if policy is not None:
        from kernelpro.seams import SEARCH_POLICIES

        if refused := SEARCH_POLICIES.refusal(policy, "--policy"):
            _fail(refused)
        settings.search.policy = policy  # type: ignore[assignment]
    runs_dir = runs_dir or settings.runs_dir
    new_budgets: dict[str, Any] = {}

    judged_before_or_fail(judged_before, resume)  # a bad file is refused before a run directory is made
    baselines_given = baseline_names(baselines)
    if resume:
        try:
            files = RunFiles.open(runs_dir, resume)
        except RunNotFound as error:
            _fail(str(error))
        hold_run_lock(files.root, f"run {resume}")
        meta = files.meta()
        reference = Path(meta["problem_path"])
        device = meta["device"]
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
        interactive = interactive or meta.get("interactive", False)
        no_memory, no_profile = meta.get("no_memory", no_memory), meta.get("no_profile", no_profile)
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
        correctness = judged_by
        decided_by = meta.get("scorecard", "kernelpro")  # a run decides its best by one scorecard
        if scorecard is not None and scorecard != decided_by:
            _fail(f"run {resume} decides its best by the {decided_by} scorecard; --scorecard cannot change on "
                  "--resume")
        scorecard = decided_by
    correctness_or_fail(correctness, settings)
    scorecard_or_fail(scorecard, settings)
    problem = problem_or_fail(reference)
    device = device_or_fail(device, settings, asked_by=f"run {resume} ran on cuda" if resume else None)
    objective_or_fail(objective, settings, device)
    if not resume:
        budgets = Budgets(**{key: value for key, value in given.items() if value is not None}
                          | ({} if given["usd"] is not None else {"usd": settings.llm.budget_usd}))
        if run_id is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}", run_id):
            _fail(f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-' (a directory name)")
        if run_id is not None and (Path(runs_dir) / run_id / "run.json").exists():
            _fail(f"a run {run_id!r} exists already in {runs_dir}; continue it with --resume {run_id}")
        run_id = run_id or new_run_id(problem.name)
        made = not (Path(runs_dir) / run_id).exists()
        try:
            files = RunFiles.create(runs_dir, run_id, {
                "problem_path": str(Path(reference).resolve()), "problem": problem.name, "device": device,
                "budgets": budgets.model_dump(), "interactive": interactive, "model": settings.llm.model,
                "no_memory": no_memory, "no_profile": no_profile, "search_policy": settings.search.policy,
                "objective": settings.search.objective, "baselines": baselines_given,
                "correctness": settings.harness.correctness_profile, "scorecard": settings.search.scorecard})
            hold_run_lock(files.root, f"run {run_id}")
            if judged_before is not None:
                from kernelpro.runs.judged_before import JudgedBefore

                JudgedBefore.adopt(judged_before, files.root)
        except OSError as error:  # nothing judged yet: no half-made run directory is left to resume
            if made:
                shutil.rmtree(Path(runs_dir) / run_id, ignore_errors=True)
            _fail(cannot_write(error, runs_dir))
    run_id = files.root.name
    baselines_wanted = wanted_by_run(files, baselines_given)
    use_llm = llm_configured(settings)
    if not use_llm:
        from kernelpro.recipes.catalogue import recipes_notice

        what = recipes_notice(problem, device, profiled=device == "cuda" and not no_profile, remembered=not no_memory,
                              tolerances=settings.harness.tolerances)
        out.print(f"[yellow]{escape(NO_LLM_NOTICE.format(recipes=what))}[/]", soft_wrap=True)

    files.root.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(files.checkpoint, check_same_thread=False)
    context = None
    try:
        saver = SqliteSaver(conn)
        graph = builder().compile(checkpointer=saver)
        config = {"configurable": {"thread_id": run_id}, "recursion_limit": budgets.recursion_limit}
        previous = graph.get_state(config).values if resume else {}
        meter = UsageMeter.from_dict(previous.get("usage"), settings) if previous.get("usage") else \
            UsageMeter(settings)
        try:
            context = build_context(settings, problem, device, gpu_name(device), files, budgets=budgets,
                                    interactive=interactive, use_llm=use_llm, meter=meter,
                                    use_memory=not no_memory, use_profiler=not no_profile)
        except Exception as error:  # noqa: BLE001 - e.g. a search memory that cannot be opened
            _fail(f"could not set up the run ({type(error).__name__}: {error}); fix it and continue with: "
                  f"kernelpro optimize --resume {run_id}", code=SETUP_FAILED)
        out.print(f"run [bold]{run_id}[/] in {files.root}" + (" (resumed)" if resume else ""), soft_wrap=True)
        if context.uses_llm and context.tool_calling:
            out.print(f"agents call tools by {escape(context.tool_calling)}", soft_wrap=True)
        if forecaster_calling := getattr(getattr(context.gate, "forecaster", None), "tool_calling", ""):
            out.print(f"the forecaster calls tools by {escape(forecaster_calling)}", soft_wrap=True)
        judge_run_baselines(out, context, files, baselines_wanted, settings, device)
        progress = Progress(out, budgets.max_iters, device, previous)
        # A run killed before its first step checkpointed starts from the beginning.
        feed: Any = None if resume and previous else {"run_id": run_id}
        if resume and previous and not graph.get_state(config).next:  # it ended: stopped, or a budget spent
            if _goes_on(out, previous, context, run_id, budgets_given=bool(new_budgets)):
                go_on(graph, config, f"the run had ended ({previous.get('stop_reason') or 'stopped'})")
        status, interrupted = "failed", False
        try:
            while True:
                for chunk in graph.stream(feed, config, context=context, stream_mode="updates",
                                          durability="sync"):
                    for node_name, values in chunk.items():
                        if node_name != "__interrupt__":
                            progress.update(node_name, values)
                snapshot = graph.get_state(config)
                if snapshot.interrupts:
                    feed = Command(resume=ask_user(out, snapshot.interrupts[0].value, editor_in_use()))
                    continue
                break
            state = graph.get_state(config).values
            status = state.get("status", "failed")
        except KeyboardInterrupt:
            state = graph.get_state(config).values
            status, interrupted = "stopped", True
            out.print(f"stopped; resume with: kernelpro optimize --resume {run_id}")
        except Exception as error:  # noqa: BLE001 - the run directory keeps everything judged so far
            if (refused := storage_error(error, files.checkpoint)) is not None:  # the outputs could not be written
                _fail(cannot_write_run(refused, run_id), code=FAILED)
            state = graph.get_state(config).values
            status = "failed"
            out.print(f"[bold red]the run failed:[/] {escape(f'{type(error).__name__}: {error}')}; what was "
                      f"judged is kept in {files.root}; resume with: kernelpro optimize --resume {run_id}")
            state = {**state, "stop_reason": f"{type(error).__name__}: {error}"}
    finally:
        conn.close()
        if context is not None:
            context.evaluate.close()  # stops the run's judging workers

    try:
        summary = write_outputs(files, state, status, context, meter)
    except Exception as error:
        if (refused := storage_error(error)) is None:
            raise
        _fail(cannot_write_run(refused, run_id), code=FAILED)  # each output is whole or absent: none is half
    by_user = interrupted or str(state.get("stop_reason", "")).startswith("stopped by the user")
    # Ctrl-C said how to go on as it stopped; a stop at a prompt says it here
    resume_hint = f"; resume with: kernelpro optimize --resume {run_id}" if by_user and not interrupted else ""
    if as_json:
        print(json.dumps(summary))
    elif state.get("reference_error") or state.get("too_big"):
        pass  # the error line below says it all
    elif summary["improved"]:
        from kernelpro.search.tree import speedup_text

        out.print(f"[bold]{status}[/]: best speedup [bold green]"
                  f"{speedup_text(summary['best_speedup'], summary['best_speedup_ci95'])}[/] "
                  f"({summary['best_variant']}, {summary['best_candidate']}){resume_hint}; report: "
                  f"{summary['report']}", soft_wrap=True)
    elif status == "stopped" and not summary["candidates_judged"]:
        out.print(f"[bold]stopped[/] before any candidate was judged{resume_hint}; report: {summary['report']}",
                  soft_wrap=True)
    else:
        out.print(f"[bold]{status}[/]: [bold yellow]no improvement: keep the reference[/] "
                  f"({summary['no_improvement_reason']}){resume_hint}; report: {summary['report']}", soft_wrap=True)
    if state.get("too_big"):  # unusable here: no candidate can be judged within this machine's memory
        _fail(f"too big for this machine: {state['too_big']}; then start a new run", code=BAD_INPUT)
    if state.get("reference_error"):  # unusable input, not a run to resume: nothing is judged against it
        _fail(f"the reference {reference} fails, so no candidate can be judged against it: "
              f"{state['reference_error']}; fix the problem file and start a new run", code=BAD_INPUT)
    code = exit_code(status, summary["improved"], by_user)
    if code != OK:
        raise typer.Exit(code=code)


def _goes_on(out: Console, state: dict[str, Any], context: Any, run_id: str, budgets_given: bool) -> bool:
    """Whether a run that ended goes on: when it was stopped (at a prompt, or by a budget) or new budgets were
    given, and the budgets leave room; else its outcome is written again, with how to give it more."""
    from kernelpro.graphs.views import stop_reason

    if state.get("status") == "failed":  # the reference itself failed: no budget mends that
        return False
    spent = stop_reason(state, context)
    if spent is not None or (state.get("status") != "stopped" and not budgets_given):
        why = spent[0] if spent is not None else state.get("stop_reason") or state.get("status", "ended")
        out.print(f"run {run_id} ended ({escape(str(why))}); to go on, resume it with a larger budget: "
                  f"kernelpro optimize --resume {run_id} --max-iters N (or --time-budget, --gpu-budget, "
                  "--usd-budget)", soft_wrap=True)
        return False
    out.print(f"run {run_id} had ended ({escape(str(state.get('stop_reason') or 'stopped'))}); it goes on",
              soft_wrap=True)
    return True


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
