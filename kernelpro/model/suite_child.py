"""The regions' problems optimised as one suite: ``kernelpro suite run`` in a child process, as a user would run
it, with the same budgets, policy and judge settings (its options given through, ``KERNELPRO_*`` inherited).

The suite lives under the model run's directory, so a model run that stopped resumes its suite (``suite run
--resume``), which judges nothing twice. Each problem's best ``ModelNew`` is read from the suite's ledger.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kernelpro.exit_codes import OK


class SuiteFailed(RuntimeError):
    """The suite's child process ended without its summary; ``code`` is its exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ProblemOutcome:
    """One region problem's result in the suite: its best candidate's source when it improved."""

    path: Path
    state: str
    improved: bool
    speedup: float | None
    speedup_ci95: list[float] | None
    best_source: str | None
    note: str


def existing_suite(suites_dir: Path) -> str | None:
    """The suite this model run started earlier (one per model run), if any."""
    found = sorted(p.parent.name for p in suites_dir.glob("*/ledger.sqlite"))
    return found[-1] if found else None


def run_suite(problems_dir: Path, suites_dir: Path, device: str, options: list[str],
              resume: str | None = None) -> dict:
    """The suite's summary (``suite run --json``'s last line); its progress goes to this process's stderr. A
    resumed suite keeps its own policy and budgets; ``options`` then holds only new totals."""
    target = ["--resume", resume] if resume else [str(problems_dir), "--device", device]
    command = [sys.executable, "-m", "kernelpro.cli", "suite", "run", *target, *options, "--runs-dir",
               str(suites_dir), "--json"]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    try:
        summary = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        summary = None
    if not isinstance(summary, dict) or done.returncode != OK and "suite_id" not in summary:
        raise SuiteFailed(f"the suite over the regions' problems ended with exit code {done.returncode} and no "
                          "summary (its errors are above)", done.returncode)
    return summary


def outcomes(suites_dir: Path, suite_id: str) -> dict[Path, ProblemOutcome]:
    """Each problem's outcome, by its file's resolved path."""
    from kernelpro.suite.layout import open_suite

    _, ledger = open_suite(suites_dir, suite_id)
    found = {}
    for row in ledger.problems():
        result = row.result or {}
        improved = bool(result.get("improved"))
        best = Path(result["best_candidate"]) if improved and result.get("best_candidate") else None
        source = best.read_text(encoding="utf-8") if best is not None and best.is_file() else None
        found[Path(row.path).resolve()] = ProblemOutcome(
            path=Path(row.path), state=row.state, improved=improved and source is not None,
            speedup=result.get("best_speedup") if improved else None,
            speedup_ci95=result.get("best_speedup_ci95") if improved else None, best_source=source,
            note=row.failure or result.get("no_improvement_reason") or result.get("stop_reason") or "")
    return found
