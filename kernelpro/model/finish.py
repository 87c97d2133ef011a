"""The second half of a model run: the suite's winners spliced into the model, each alone and then together,
judged end to end against the original, and the patched model and the report written."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kernelpro.atomic_write import write_atomic
from kernelpro.config import Settings
from kernelpro.harness.result import EvalResult
from kernelpro.model.plan import ModelPlan
from kernelpro.model.splice import SpliceError, Winner, patched_source
from kernelpro.model.suite_child import ProblemOutcome
from kernelpro.model.verify import correct, judge_patched, predicted_gain


@dataclass
class RegionResult:
    """A region's part in the end: its share, its best speedup, whether it was spliced, its gains."""

    name: str
    share: float
    ceiling: float | None
    problem: str | None
    best: float | None = None
    best_ci95: list[float] | None = None
    spliced: bool = False
    predicted_gain: float | None = None
    measured_gain: float | None = None
    measured_ci95: list[float] | None = None
    note: str = ""

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class ModelOutcome:
    status: str
    regions: list[RegionResult]
    end_to_end: EvalResult | None = None
    predicted: float | None = None
    patched_model: Path | None = None
    report: Path | None = None
    notes: list[str] = field(default_factory=list)


def _region_results(plan: ModelPlan, outcomes: dict[Path, ProblemOutcome]) -> tuple[list[RegionResult], list[Winner]]:
    rows, winners = [], []
    for entry in sorted(plan.regions, key=lambda e: e.share, reverse=True):
        row = RegionResult(name=entry.region.name, share=entry.share, ceiling=entry.ceiling, problem=entry.problem,
                           note=entry.skipped)
        rows.append(row)
        if not entry.problem:
            continue
        found = outcomes.get(Path(entry.problem).resolve())
        if found is None:
            row.note = "not in the suite's ledger"
        elif not found.improved:
            row.note = found.note or f"no faster candidate ({found.state})"
        else:
            row.best, row.best_ci95 = found.speedup, found.speedup_ci95
            row.predicted_gain = predicted_gain([(entry.share, found.speedup)]) if found.speedup else None
            winners.append(Winner(region=entry.region, source=found.best_source or ""))
    return rows, winners


def finish(plan: ModelPlan, outcomes: dict[Path, ProblemOutcome], suite_status: str, settings: Settings
           ) -> ModelOutcome:
    """Splice, judge, write ``patched_model.py``; the report is the caller's (``report.write_report``)."""
    rows, winners = _region_results(plan, outcomes)
    by_name = {row.name: row for row in rows}
    reference = plan.reference.read_text(encoding="utf-8")
    singles: list[tuple[Winner, str]] = []
    for winner in winners:
        try:
            singles.append((winner, patched_source(plan.name, reference, [winner])))
        except SpliceError as error:
            by_name[winner.region.name].note = f"not spliced: {error}"
    results = judge_patched(plan.name, reference, [source for _, source in singles], plan.device, settings)
    fitting = []
    for (winner, _), result in zip(singles, results, strict=True):
        row = by_name[winner.region.name]
        if correct(result):
            fitting.append((winner, result))
            row.measured_gain, row.measured_ci95 = result.speedup, result.speedup_ci95
        else:
            row.note = (f"not spliced: the model with it spliced is {result.status}"
                        + (f" ({result.reason})" if result.reason else "") + f": {result.message[:300]}")
    if not fitting:
        return ModelOutcome(status="no_improvement" if suite_status == "completed" else suite_status, regions=rows)
    for winner, _ in fitting:
        by_name[winner.region.name].spliced = True
    source = patched_source(plan.name, reference, [winner for winner, _ in fitting])
    final = fitting[0][1] if len(fitting) == 1 else judge_patched(plan.name, reference, [source], plan.device,
                                                                    settings)[0]
    predicted = predicted_gain([(by_name[w.region.name].share, by_name[w.region.name].best or 1.0)
                                for w, _ in fitting])
    path = plan.directory / "patched_model.py"
    write_atomic(path, source)
    status = suite_status if suite_status != "completed" else ("completed" if correct(final) else "incorrect")
    return ModelOutcome(status=status, regions=rows, end_to_end=final, predicted=predicted, patched_model=path)
