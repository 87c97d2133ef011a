"""`kernelpro forecast ...`: fit the model-free forecaster on judged candidates, and score forecasters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from kernelpro.cli.errors import fail as _fail
from kernelpro.config import load_settings

console = Console()
forecast_app = typer.Typer(help="Forecast candidates' speedup classes before measuring them.", no_args_is_help=True)
DatasetArgument = Annotated[Path, typer.Argument(help="A judged-candidate dataset (JSON lines, forecast.dataset).")]
HoldoutOption = Annotated[float, typer.Option(
    "--holdout", help="Score on this share of the problems only, fitting the model-free forecaster and the class "
                      "prior on the others (no problem in both); 0 scores on everything with the saved model.")]


@forecast_app.command("fit")
def forecast_fit(
    dataset: DatasetArgument,
    out: Annotated[Optional[Path], typer.Option("--out", help="Where to save it (forecast.model_path).")] = None,
    holdout: HoldoutOption = 0.0,
    seed: Annotated[int, typer.Option(help="Seed of the problem split.")] = 0,
) -> None:
    """Fit the model-free forecaster on the correct candidates of a dataset and save it."""
    from kernelpro.forecast.dataset import DatasetError, read_rows, split_by_problem
    from kernelpro.forecast.evaluate import inputs_for_rows, scored_rows
    from kernelpro.forecast.model_free import ModelError, ModelFree

    settings = load_settings()
    try:
        rows = read_rows(dataset)
        train = split_by_problem(rows, holdout, seed)[0] if holdout else rows
        usable = scored_rows(train)
        stats = settings.compile if settings.forecast.kernel_stats else None
        model = ModelFree.fit(inputs_for_rows(usable, stats), [r.speed_class for r in usable])
    except (DatasetError, ModelError) as exc:
        _fail(str(exc))
    path = out or settings.forecast.model_path
    model.save(path)
    console.print(f"fitted on {len(usable)} correct candidates of {len({r.problem_hash for r in train})} problems "
                  f"({len(train) - len(usable)} failures left out); saved to {path}", highlight=False)


@forecast_app.command("eval")
def forecast_eval(
    dataset: DatasetArgument,
    forecaster: Annotated[Optional[list[str]], typer.Option(
        "--forecaster", help="model_free, class_prior, llm or llm_defer (repeatable; default model_free, and the "
                             "class prior beside it with --holdout).")] = None,
    holdout: HoldoutOption = 0.0,
    seed: Annotated[int, typer.Option(help="Seed of the problem split.")] = 0,
    model: Annotated[Optional[Path], typer.Option("--model", help="The fitted model-free forecaster "
                                                                  "(default forecast.model_path).")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Directory for report.md, scores.json and the "
                                                              "plots.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object.")] = False,
) -> None:
    """Score forecasters on judged candidates: accuracy, off-by-one accuracy, half-Brier, ordinal CRPS, NLL, ECE,
    AURC for three confidences, speedup recovered at the top 1/10/50%, MAPE of the expected speedup, Spearman."""
    from kernelpro.app.forecast import forecaster_by_name
    from kernelpro.forecast.dataset import DatasetError, read_rows, split_by_problem
    from kernelpro.forecast.evaluate import evaluate, truth_class
    from kernelpro.forecast.model_free import ModelError
    from kernelpro.forecast.report import Scored, write_report

    settings = load_settings()
    if model is not None:
        settings.forecast.model_path = model
    names = forecaster or (["model_free", "class_prior"] if holdout else ["model_free"])
    try:
        rows = read_rows(dataset)
        train, test = split_by_problem(rows, holdout, seed) if holdout else ([], rows)
        if holdout and not train:
            _fail("the dataset has a single problem: nothing to hold out")
        scored = []
        for name in names:
            stats = settings.compile if settings.forecast.kernel_stats and name == "model_free" else None
            chosen = forecaster_by_name(settings, name, train or None)
            if getattr(chosen, "tool_calling", ""):  # an LLM forecaster: which tool protocol, and why
                Console(stderr=True).print(f"the {name} forecaster calls tools by {chosen.tool_calling}",
                                           soft_wrap=True, markup=False, highlight=False)
            report, forecasts = evaluate(chosen, test, stats)
            scored.append(Scored(report, forecasts, [truth_class(r) for r in test]))
    except (DatasetError, ModelError, ValueError) as exc:
        _fail(str(exc))
    split = (f"held out: {len({r.problem_hash for r in test})} problems ({len(test)} candidates), fitted on "
             f"{len({r.problem_hash for r in train})} others ({len(train)})" if holdout else
             f"all {len(rows)} candidates of {len({r.problem_hash for r in rows})} problems")
    if out is not None:
        path = write_report(out, scored, f"Forecasters on {dataset.name}", [split])
        split += f"; report: {path}"
    if as_json:
        typer.echo(json.dumps({"dataset": str(dataset), "split": split, "forecasters": [s.report for s in scored]}))
        return
    from kernelpro.forecast.report import markdown

    console.print(markdown(scored, f"Forecasters on {dataset.name}", [split]).split("\n![")[0], markup=False,
                  highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(forecast_app, name="forecast")
