"""`kernelpro data export`: the judged-candidate dataset as training data for forecasters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal, Optional

import typer
from rich.console import Console

from kernelpro.cli.errors import fail as _fail
from kernelpro.config import load_settings

console = Console()
data_app = typer.Typer(help="The judged-candidate dataset every judging run appends to.", no_args_is_help=True)


@data_app.command("export")
def data_export(
    out: Annotated[Path, typer.Argument(help="The JSON-lines file to write.")],
    kind: Annotated[Literal["forecaster", "rl"], typer.Option(
        "--format", help="forecaster: one example per correct candidate (sources, hardware, class, speedup); rl: "
                         "the forecaster's prompt as chat messages with the target class, for the rewards in "
                         "kernelpro.forecast.rewards (correctness, brier, crps).")] = "forecaster",
    dataset: Annotated[Optional[Path], typer.Option("--dataset", help="Default: forecast.dataset.")] = None,
    failures: Annotated[bool, typer.Option("--failures", help="Keep failed candidates (class 0) too.")] = False,
) -> None:
    """Export the judged-candidate dataset for training or scoring forecasters."""
    from kernelpro.agents.forecaster import ForecasterInput, messages_for
    from kernelpro.forecast.dataset import DatasetError, read_rows
    from kernelpro.profiling.gpu_specs import lookup

    path = dataset or load_settings().forecast.dataset
    try:
        rows = read_rows(path)
    except DatasetError as exc:
        _fail(str(exc))
    kept = [r for r in rows if failures or r.speed_class >= 1]
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as sink:
        for row in kept:
            target = {"target_class": row.speed_class, "speedup": row.speedup, "speedup_ci95": row.speedup_ci95,
                      "verdict": row.verdict, "reason": row.reason, "problem_hash": row.problem_hash}
            if kind == "forecaster":
                example = {"problem_name": row.problem_name, "problem_source": row.problem_source,
                           "candidate_source": row.candidate_source, "hardware": row.hardware,
                           "reference_ms": row.reference_ms, "traffic_bytes": row.traffic_bytes, **target}
            else:
                specs = lookup(row.hardware) if row.hardware not in ("cpu", "cuda") else None
                view = ForecasterInput(problem_name=row.problem_name, problem_source=row.problem_source,
                                       candidate_source=row.candidate_source,
                                       hardware=specs.render() if specs else row.hardware)
                example = {"messages": messages_for(view), **target}
            sink.write(json.dumps(example) + "\n")
    console.print(f"{len(kept)} examples ({kind}) from {len(rows)} judged candidates in {path} -> {out}",
                  highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")
