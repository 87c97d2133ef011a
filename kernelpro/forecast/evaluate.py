"""Forecasters run over dataset rows and scored: the path `kernelpro forecast eval` and the benchmark share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kernelpro.config import CompileSettings
from kernelpro.forecast.classes import Forecast
from kernelpro.forecast.dataset import JudgedRow
from kernelpro.forecast.features import Inputs
from kernelpro.forecast.kernel_stats import kernel_stats
from kernelpro.forecast.scores import score_forecasts
from kernelpro.profiling.gpu_specs import lookup


class Forecaster(Protocol):
    name: str

    def forecast(self, items: Sequence[Inputs]) -> list[Forecast]: ...


def inputs_for(row: JudgedRow, kernel_stats: dict[str, float] | None = None) -> Inputs:
    specs = lookup(row.hardware) if row.hardware not in ("cpu", "cuda") else None
    return Inputs(problem_source=row.problem_source, candidate_source=row.candidate_source,
                  reference_ms=row.reference_ms, traffic_bytes=row.traffic_bytes,
                  bandwidth_gbs=specs.memory_bandwidth_gbs if specs else None, kernel_stats=kernel_stats or {},
                  problem_name=row.problem_name, hardware=row.hardware)


def inputs_for_rows(rows: Sequence[JudgedRow], compile_settings: CompileSettings | None = None) -> list[Inputs]:
    """Every row's inputs; with ``compile_settings``, the kernels' ptxas and SASS statistics too (compiled here,
    on the CPU, for the kernels whose compile requests the source spells out)."""
    stats = kernel_stats([r.candidate_source for r in rows], compile_settings) if compile_settings else None
    return [inputs_for(r, stats[i] if stats else None) for i, r in enumerate(rows)]


def truth_class(row: JudgedRow) -> int:
    """The class a forecaster is scored against: 0 (not scored) for a failure, and for a candidate of a degenerate
    problem (its speedup is hollow: the judge found the problem's output constant, say)."""
    return 0 if row.problem_findings or not row.speedup else row.speed_class


def scored_rows(rows: Sequence[JudgedRow]) -> list[JudgedRow]:
    """The rows a forecaster is scored and trained on: correct candidates with a measured speedup, of problems
    the judge found sound."""
    return [r for r in rows if truth_class(r) >= 1]


def evaluate(forecaster: Forecaster, rows: Sequence[JudgedRow], compile_settings: CompileSettings | None = None
             ) -> tuple[dict[str, object], list[Forecast]]:
    """The forecaster's forecasts for every row and their scores (failures counted, not scored)."""
    forecasts = forecaster.forecast(inputs_for_rows(rows, compile_settings))
    report = score_forecasts(forecasts, [truth_class(r) for r in rows], [r.speedup for r in rows])
    degenerate = sum(1 for r in rows if r.problem_findings and r.speed_class >= 1)
    return {"forecaster": forecaster.name, **report, "degenerate_left_out": degenerate}, forecasts
