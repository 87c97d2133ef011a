"""The suite's energy columns: joules per call and watts of each problem's reference and best, beside time.

They come from each run's ``kernelpro optimize --json`` object (``reference_energy_j``, ``reference_power_w``,
``best_energy_j``, ``best_power_w``, ``best_energy_ratio`` and ``best_edp_ratio`` with their ``_ci95``
intervals: the deciding verdict's NVML readings). The columns appear when the suite's objective is energy or EDP
or when any run measured energy (``harness.energy`` on); otherwise the tables have no energy columns at all.
"""

from __future__ import annotations

from typing import Any

from kernelpro.search.objective import ENERGY_OBJECTIVES, joules_text
from kernelpro.search.tree import speedup_text
from kernelpro.suite.ledger import ProblemRow

ENERGY_HEADER = ("reference J/call", "reference W", "best J/call", "best W", "energy ratio", "EDP ratio")
_MEASURED = ("reference_energy_j", "best_energy_j", "best_energy_ratio")


def suite_objective(config: dict[str, Any], rows: list[ProblemRow]) -> str:
    """What the suite's runs optimised: its ``--objective`` as the ledger recorded it, else what the runs'
    summaries say (suites recorded before the objective was), else time."""
    if config.get("objective"):
        return str(config["objective"])
    found = {row.run_outcome.objective for row in rows} - {None}
    return ", ".join(sorted(found)) if found else "time"


def shows_energy(config: dict[str, Any], rows: list[ProblemRow]) -> bool:
    """Whether the tables get energy columns: an energy objective, or any run whose summary carries energy."""
    objective = suite_objective(config, rows)
    return any(name in objective for name in ENERGY_OBJECTIVES) or \
        any(getattr(row.run_outcome, key) is not None for row in rows for key in _MEASURED)


def _joules(value: float | None) -> str:
    return "-" if value is None else joules_text(value)


def _watts(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} W"


def _ratio(value: float | None, ci95: list[float] | None) -> str:
    return "-" if value is None else speedup_text(value, ci95)


def energy_cells(row: ProblemRow) -> tuple[str, ...]:
    """The row's cells under ``ENERGY_HEADER``: "-" where its run measured nothing (or has no best)."""
    run = row.run_outcome
    return (_joules(run.reference_energy_j), _watts(run.reference_power_w), _joules(run.best_energy_j),
            _watts(run.best_power_w), _ratio(run.best_energy_ratio, run.best_energy_ci95),
            _ratio(run.best_edp_ratio, run.best_edp_ci95))


def energy_pair(row: ProblemRow) -> tuple[str, str]:
    """``suite status``'s two energy cells: joules per call and watts, reference -> best."""
    cells = energy_cells(row)
    return f"{cells[0]} -> {cells[2]}", f"{cells[1]} -> {cells[3]}"
