"""`kernelpro eval`: judge candidates and print their verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelpro.cli.inputs import (
    CorrectnessOption,
    ScorecardOption,
    candidate_or_fail,
    correctness_or_fail,
    device_or_fail,
    problem_or_fail,
    scorecard_or_fail,
)
from kernelpro.config import load_settings
from kernelpro.harness.result import EvalResult
from kernelpro.harness.timing.stats import speedup_text
from kernelpro.problem import Problem

console = Console()

STATUS_STYLE = {"ok": "bold green", "incorrect": "bold red", "rejected": "bold magenta",
                "compile_error": "bold yellow", "runtime_error": "bold red", "timeout": "bold yellow"}
DeviceOption = Annotated[str, typer.Option("--device", help="cpu, cuda, or auto (cuda when a GPU is visible).")]


def eval_command(
    reference: Annotated[Path, typer.Argument(help="KernelBench-format problem: Model, get_inputs, get_init_inputs.")],
    candidates: Annotated[list[Path], typer.Argument(help="Python file(s) defining ModelNew.")],
    device: DeviceOption = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")] = False,
    no_timing: Annotated[bool, typer.Option("--no-timing", help="Check correctness and guards only.")] = False,
    timeout: Annotated[Optional[float], typer.Option(help="Wall-time limit per candidate, seconds.")] = None,
    correctness: Annotated[Optional[str], CorrectnessOption] = None,
    scorecard: Annotated[Optional[str], ScorecardOption] = None,
) -> None:
    """Judge candidates: correct on fresh random inputs, timed honestly, guarded against reward hacks.

    Several candidates of one problem go through the pipeline: CUDA kernels compiled ahead in a CPU pool, then one
    worker per GPU (long-lived by default; harness.worker_mode = "fresh" for a new process per candidate).
    Each timed verdict shows its speedup in both scorecards, kernelpro's and KernelBench's convention; --scorecard
    names the one whose call decides (``improves`` in --json).
    With one candidate --json prints its verdict; with several, {"problem": ..., "results": [...]}.
    Exits 0 whenever the judge worked, whatever the verdicts; 2 when the inputs could not be judged (a missing or
    unreadable file, a problem not in KernelBench's format, --device cuda without a GPU, a reference that fails).
    """
    from kernelpro.app.compose import evaluator

    settings = load_settings()
    if timeout is not None:
        settings.harness.timeout_s = timeout
    correctness_or_fail(correctness, settings)
    scorecard_or_fail(scorecard, settings)
    card, effect = settings.search.scorecard, settings.harness.min_effect
    problem = problem_or_fail(reference)
    sources = [candidate_or_fail(path) for path in candidates]
    device = device_or_fail(device, settings)
    judge = evaluator(settings, device)  # the judge harness.backend names, as every run uses
    try:
        results = judge.check_many(problem, sources) if no_timing else judge.judge_many(problem, sources)
    finally:
        judge.close()
    if settings.forecast.record and not no_timing:
        _record(settings.forecast.dataset, problem, sources, results)
    if as_json:
        rows = [{"candidate_file": str(path), **result.to_json_dict(), "scorecard": card,
                 "kernelbench_verdict": result.kernelbench_call(effect),
                 "improves": result.improves_under(card, effect)}
                for path, result in zip(candidates, results, strict=True)]
        typer.echo(json.dumps(rows[0] if len(rows) == 1 else {"problem": problem.name, "results": rows}))
    elif len(results) == 1:
        _print_verdict(results[0], problem.name, candidates[0].name, effect, card)
    else:
        _print_batch(results, problem.name, candidates)
    if any(result.reason == "reference_failed" for result in results):
        raise typer.Exit(code=2)


def _record(dataset: Path, problem: Problem, sources: list[str], results: list[EvalResult]) -> None:
    """Every judged candidate goes into the judged-candidate dataset (``forecast.dataset``)."""
    from kernelpro.forecast.dataset import append_rows, hardware_name, row_for

    hardware = hardware_name(results[0].device or "cpu") if results else "cpu"
    try:
        append_rows(dataset, [row_for(problem, source, result, hardware, "eval")
                              for source, result in zip(sources, results, strict=True)])
    except OSError as error:
        Console(stderr=True).print(f"[yellow]not recorded in {dataset}: {error}[/]", highlight=False)


def distinct_names(paths: list[Path]) -> list[str]:
    """Each path's shortest tail (file name, then its folders one by one) that no other path shares; a path given
    twice shows the same name twice."""
    parts = [Path(p).resolve().parts for p in paths]
    names = []
    for i, mine in enumerate(parts):
        others = [theirs for j, theirs in enumerate(parts) if j != i and theirs != mine]
        depth = 1
        while depth < len(mine) and any(theirs[-depth:] == mine[-depth:] for theirs in others):
            depth += 1
        names.append(str(paths[i]) if depth >= len(mine) else str(Path(*mine[-depth:])))
    return names


def _print_batch(results: list[EvalResult], problem: str, candidates: list[Path]) -> None:
    console.print(f"[bold]{len(results)} candidates for {problem}[/], device {results[0].device}")
    names = distinct_names(candidates)
    width = max(len(name) for name in names)
    for name, result in zip(names, results, strict=True):
        style = STATUS_STYLE.get(result.status, "bold")
        timing = (f"  {speedup_text(result.speedup, result.speedup_ci95)} {result.speed_verdict or ''} "
                  f"({result.candidate_ms:.4g} ms vs {result.reference_ms:.4g} ms)" if result.speedup else "")
        reason = f" ({result.reason})" if result.reason else ""
        console.print(f"{escape(name.ljust(width))}  [{style}]{result.status}[/]{reason}{timing}{_problem_tag(result)}",
                      soft_wrap=True, highlight=False)


def _problem_tag(result: EvalResult) -> str:
    """What is wrong with the problem itself, beside the verdict: ``  [problem: constant_output]``."""
    reasons = ", ".join(f.reason for f in result.problem_findings)
    return f"  [bold magenta]\\[problem: {reasons}][/]" if reasons else ""


def _print_verdict(result: EvalResult, problem: str, candidate: str, min_effect: float,
                   scorecard: str = "kernelpro") -> None:
    style = STATUS_STYLE.get(result.status, "bold")
    reason = f" ({result.reason})" if result.reason else ""
    console.print(f"[{style}]{result.status}[/]{reason}  {candidate} on {problem}, device {result.device}"
                  f"{_problem_tag(result)}", soft_wrap=True)
    console.print(result.message, markup=False, highlight=False)
    if result.candidate and result.reference:
        table = Table(show_edge=False, box=None, padding=(0, 2))
        for column in ("", "median ms", "p10", "p90", "spread", "trials"):
            table.add_column(column, justify="right")
        for name, timing in (("reference", result.reference), ("candidate", result.candidate)):
            table.add_row(name, f"{timing.median_ms:.4g}", f"{timing.p10_ms:.4g}", f"{timing.p90_ms:.4g}",
                          f"{timing.spread:.1%}", str(timing.trials))
        console.print(table)
        deciding = {scorecard: " (decides)"}
        console.print(f"speedup [bold]{speedup_text(result.speedup, result.speedup_ci95)}[/] (95% interval): "
                      f"[bold]{result.speed_verdict}[/] at a minimum effect of "
                      f"{min_effect:.0%}  (kernelpro: {result.candidate.method}){deciding.get('kernelpro', '')}",
                      highlight=False)
        console.print(kernelbench_line(result, min_effect) + deciding.get("kernelbench", ""), highlight=False)
        notes = [("host-bound: the reference's launches cost more than its GPU time, so a speedup here is a "
                  "launch-overhead saving") if result.host_bound else "",
                 "timed on a busy machine: not a speedup to act on" if result.contended else ""]
        for note in filter(None, notes):
            console.print(f"  [yellow]{note}[/]", highlight=False)
    for finding in result.guards:
        console.print(f"  [{'red' if finding.severity == 'reject' else 'yellow'}]{finding.severity}[/] "
                      f"{finding.reason} ({finding.source}): {finding.message}", highlight=False)
    for found in result.problem_findings:
        console.print(f"  [magenta]problem[/] {found.reason}: {found.message}", highlight=False)
    if result.worker_output and result.status not in ("ok", "incorrect"):
        console.print("[dim]last output of the candidate:[/]")
        console.print(result.worker_output[-2000:], markup=False, highlight=False)


def kernelbench_line(result: EvalResult, min_effect: float) -> str:
    """The verdict's speedup in KernelBench's convention (``EvalResult.kernelbench``), its call and method."""
    score = result.kernelbench
    if score is None:
        return "KernelBench convention: not measured (only a refereed verdict carries it)"
    return (f"KernelBench convention: [bold]{speedup_text(score.speedup, score.speedup_ci95)}[/] (95% interval): "
            f"[bold]{result.kernelbench_call(min_effect)}[/], {score.reference_ms:.4g} ms vs {score.candidate_ms:.4g}"
            f" ms over {score.rounds} rounds  ({score.method})")


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
