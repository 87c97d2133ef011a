"""`kernelpro profile` (on a GPU) and `kernelpro diagnose` (from a saved profile, anywhere). Prints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape

from kernelpro.cli.errors import fail as _fail
from kernelpro.cli.inputs import candidate_or_fail, problem_or_fail
from kernelpro.exit_codes import FAILED


def register(app: typer.Typer) -> None:
    @app.command("profile")
    def profile(
        reference: Annotated[Path, typer.Argument(help="KernelBench-format problem file.")],
        candidate: Annotated[Optional[Path], typer.Argument(help="A candidate (ModelNew) to profile instead of "
                                                                 "the reference.")] = None,
        quick: Annotated[bool, typer.Option("--quick", help="Speed-of-light metrics only (stage 1), not every "
                                                            "section.")] = False,
        kernel: Annotated[Optional[str], typer.Option("--kernel", metavar="REGEX",
                                                      help="Only kernels matching this regex.")] = None,
        out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR",
                                                    help="Keep the .ncu-rep and CSV here.")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> None:
        """Profile one call with Nsight Compute (clocks never locked), classify each kernel, diagnose it."""
        from kernelpro.profiling.ncu_command import NcuOptions
        from kernelpro.profiling.service import profile_and_diagnose

        problem = problem_or_fail(reference)
        source = candidate_or_fail(candidate) if candidate else None
        console = Console(stderr=as_json)
        from kernelpro.profiling.collect import gpu_visible

        tool = "Nsight Compute" if gpu_visible() else "torch.profiler (no NVIDIA GPU here, so no Nsight Compute)"
        console.print(f"profiling {candidate or reference} with {tool} ...", soft_wrap=True)
        profiled = profile_and_diagnose(problem.source, source, workdir=out,
                                        options=NcuOptions(stage=1 if quick else 2, kernel_regex=kernel))
        result = profiled.profile
        if as_json:
            payload = {"source": result.source, "gpu": profiled.gpu, "clock_hz": result.clock_hz,
                       "ncu_version": result.ncu_version, "ncu_overhead_s": result.overhead_s,
                       "error": result.error, "warnings": result.warnings,
                       "report": result.report_path, "csv": result.csv_path,
                       "kernels": profiled.diagnosis.to_dict()["kernels"] if profiled.diagnosis else [],
                       "findings": profiled.diagnosis.to_dict()["findings"] if profiled.diagnosis else [],
                       "events": [e.model_dump() for e in result.events]}
            print(json.dumps(payload))
        else:
            for warning in result.warnings:
                console.print(f"[yellow]{escape(warning)}[/]", soft_wrap=True)
            console.print(profiled.render(), markup=False, highlight=False, soft_wrap=True)
            if result.overhead_s is not None:
                console.print(f"ncu took {result.wall_s:.1f} s ({result.overhead_s:.1f} s more than a plain run)")
        if result.source == "none":
            raise typer.Exit(code=FAILED)

    @app.command("diagnose")
    def diagnose(
        ncu_csv: Annotated[Optional[Path], typer.Option("--ncu-csv", help="From `ncu --csv --page raw "
                                                                          "--print-units base`.")] = None,
        ncu_rep: Annotated[Optional[Path], typer.Option("--ncu-rep", help="A saved .ncu-rep report.")] = None,
        gpu: Annotated[Optional[str], typer.Option("--gpu", help="GPU name when the profile lacks it.")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    ) -> None:
        """Diagnose a saved Nsight Compute profile: roofline class and ranked findings per kernel. No GPU needed."""
        from kernelpro.profiling.ncu_csv import NcuCsvError
        from kernelpro.profiling.ncu_report import NcuReportError
        from kernelpro.profiling.service import SavedProfileError, diagnose_saved

        try:
            diagnosis, specs = diagnose_saved(ncu_csv, ncu_rep, gpu)
        except (SavedProfileError, NcuCsvError, NcuReportError) as error:
            _fail(str(error))
        if as_json:
            print(json.dumps({"gpu": specs.name, **diagnosis.to_dict()}))
        else:
            Console().print(f"on {specs.name}:\n{diagnosis.render()}", markup=False, highlight=False,
                            soft_wrap=True)
