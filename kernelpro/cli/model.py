"""`kernelpro model SOURCE`: a real model's hot regions found, optimised as a suite, spliced back, and the
end-to-end gain measured by the judge."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelpro.cli.errors import fail
from kernelpro.cli.inputs import budgets_or_fail, device_or_fail, hold_run_lock, releases_run_locks
from kernelpro.config import load_settings
from kernelpro.exit_codes import FAILED


def _suite_options(policy, llm_model, max_iters, time_budget, gpu_budget, usd_budget, per_problem_budget,
                   objective, no_memory, no_profile) -> tuple[list[str], list[str]]:
    """The options every new suite gets, and those a resumed one takes (new totals only)."""
    pairs = [("--policy", policy), ("--model", llm_model), ("--max-iters", max_iters),
             ("--per-problem-budget", per_problem_budget), ("--objective", objective)]
    totals = [("--time-budget", time_budget), ("--gpu-budget", gpu_budget), ("--usd-budget", usd_budget)]
    given = lambda items: [text for flag, value in items if value is not None for text in (flag, str(value))]  # noqa: E731
    flags = ["--no-memory"] * no_memory + ["--no-profile"] * no_profile
    return given(pairs) + given(totals) + flags, given(totals)


def _print_regions(out: Console, plan) -> None:
    table = Table("region", "µs per forward", "share", "ceiling", "problem")
    for entry in sorted(plan.regions, key=lambda e: e.share, reverse=True):
        ceiling = f"{entry.ceiling:.2f}x" if entry.ceiling else "unbounded"
        problem = Path(entry.problem).name if entry.problem else (f"skipped: {entry.skipped}" if entry.skipped else "")
        table.add_row(escape(entry.region.name), f"{entry.time_us:.1f}", f"{entry.share:.1%}", ceiling,
                      escape(problem[:90]))
    out.print(table)


def model_command(
    source: Annotated[Optional[str], typer.Argument(
        help="A problem file (Model, get_inputs, get_init_inputs), FILE.py:factory (with --inputs), or a local "
             "Hugging Face model directory or config.json (random weights, nothing downloaded).")] = None,
    inputs: Annotated[Optional[str], typer.Option("--inputs", help="FILE.py:fn returning one forward call's inputs "
                                                  "(with SOURCE FILE.py:factory).")] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, or auto.")] = "auto",
    top: Annotated[int, typer.Option("--top", help="How many regions to optimise, the largest by share.")] = 3,
    depth: Annotated[int, typer.Option("--depth", help="Module depth regions are cut at (1: the model's own "
                                                       "children).")] = 1,
    real_weights: Annotated[bool, typer.Option("--real-weights", help="The problems carry the regions' own "
                                                "weights instead of random ones.")] = False,
    batch: Annotated[int, typer.Option("--batch", help="A Hugging Face model's batch size.")] = 1,
    seq_len: Annotated[int, typer.Option("--seq-len", help="A Hugging Face model's sequence length.")] = 128,
    policy: Annotated[Optional[str], typer.Option("--policy", help="Search policy of every region's run.")] = None,
    objective: Annotated[Optional[str], typer.Option("--objective", help="time, energy or edp.")] = None,
    llm_model: Annotated[Optional[str], typer.Option("--model", help="LiteLLM model for every agent.")] = None,
    max_iters: Annotated[Optional[int], typer.Option("--max-iters", help="Candidates judged per region.")] = None,
    time_budget: Annotated[Optional[str], typer.Option("--time-budget", help="The suite's wall time, e.g. 2h.")]
    = None,
    gpu_budget: Annotated[Optional[str], typer.Option("--gpu-budget", help="The suite's GPU time.")] = None,
    usd_budget: Annotated[Optional[float], typer.Option("--usd-budget", help="The suite's model dollars.")] = None,
    per_problem_budget: Annotated[Optional[str], typer.Option(
        "--per-problem-budget", help="Caps on each region's share: time=10m,gpu=5m,usd=0.5.")] = None,
    runs_dir: Annotated[Optional[Path], typer.Option("--runs-dir", help="Where model run directories go.")] = None,
    resume: Annotated[Optional[str], typer.Option("--resume", help="Finish the model run with this id.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Progress to stderr; the last stdout line is one JSON "
                                                         "object.")] = False,
    no_memory: Annotated[bool, typer.Option("--no-memory", help="Runs neither read nor write the search memory.")]
    = False,
    no_profile: Annotated[bool, typer.Option("--no-profile", help="Skip Nsight Compute profiles.")] = False,
) -> None:
    """Profile a model, optimise its largest regions as a suite, splice the winners back and judge the whole."""
    from kernelpro.model.finish import finish
    from kernelpro.model.plan import ModelPlan
    from kernelpro.model.report import summary, write_report
    from kernelpro.model.suite_child import SuiteFailed, existing_suite, outcomes, run_suite

    out = Console(stderr=True) if as_json else Console()
    budgets_or_fail(max_iters, time_budget, gpu_budget, usd_budget)
    if top < 1 or depth < 1:
        fail(f"--top {top} --depth {depth}: give at least 1 for each")
    settings = load_settings()
    runs_dir = Path(runs_dir or settings.runs_dir)
    new_options, resume_options = _suite_options(policy, llm_model, max_iters, time_budget, gpu_budget, usd_budget,
                                                 per_problem_budget, objective, no_memory, no_profile)
    if resume:
        directory = runs_dir / resume
        if not (directory / "model.json").is_file():
            fail(f"no model run {resume!r} in {runs_dir}")
        hold_run_lock(directory, f"model run {resume}")
        plan = ModelPlan.load(directory)
    elif not source:
        fail("give SOURCE (a problem file, FILE.py:factory with --inputs, or a Hugging Face model directory), "
             "or --resume ID")
    else:
        plan = _prepare(out, source, inputs, device_or_fail(device, settings), top, depth, real_weights, batch,
                        seq_len, runs_dir)
        plan.suite_options = new_options
        plan.save()
    _print_regions(out, plan)
    if not plan.extracted():
        fail("no region of this model could be written as a problem (the reasons are in the table above)")
    suite_id = plan.suite_id or existing_suite(plan.suites_dir)
    try:
        result = run_suite(plan.problems_dir, plan.suites_dir, plan.device,
                           resume_options if suite_id else plan.suite_options, resume=suite_id)
    except SuiteFailed as error:
        fail(f"{error}; continue with: kernelpro model --resume {plan.directory.name}", code=error.code or FAILED)
    plan.suite_id = result["suite_id"]
    plan.save()
    out.print(f"splicing and judging the whole model on {plan.device} ...")
    outcome = finish(plan, outcomes(plan.suites_dir, plan.suite_id), result["status"], settings)
    report = write_report(plan, outcome)
    line = summary(plan, outcome)
    if as_json:
        print(json.dumps(line))
        return
    from kernelpro.harness.timing.stats import speedup_text

    if outcome.end_to_end is not None:
        measured = speedup_text(line["end_to_end_speedup"], line["end_to_end_ci95"])
        out.print(f"[bold]{outcome.status}[/]: end to end {measured}"
                  f" ({'correct' if line['end_to_end_correct'] else 'NOT correct'}), predicted "
                  f"{speedup_text(outcome.predicted)}; patched model {outcome.patched_model}", soft_wrap=True)
    else:
        out.print(f"[bold]{outcome.status}[/]: no region was spliced; the model stays as it is", soft_wrap=True)
    out.print(f"report: {report}", soft_wrap=True)


def _prepare(out: Console, source: str, inputs, device: str, top: int, depth: int, real_weights: bool, batch: int,
             seq_len: int, runs_dir: Path):
    from kernelpro.model.prepare import ModelFailed, prepare
    from kernelpro.model.regions import TraceError
    from kernelpro.model.source import SourceError, read_source

    try:
        model = read_source(source, inputs, batch, seq_len)
    except SourceError as error:
        fail(str(error))
    run_id = f"model-{model.name}-{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}"
    directory = runs_dir / run_id
    directory.mkdir(parents=True, exist_ok=False)
    hold_run_lock(directory, f"model run {run_id}")
    out.print(f"model run [bold]{run_id}[/] in {directory}: profiling {escape(model.name)} on {device}",
              soft_wrap=True)
    try:
        return prepare(model, directory, device, top, depth, real_weights)
    except (TraceError, ModelFailed) as error:
        fail(str(error))


def register(app: typer.Typer) -> None:
    app.command("model")(releases_run_locks(model_command))
