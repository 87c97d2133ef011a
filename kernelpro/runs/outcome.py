"""What a run ended with, as one typed object: ``summary.json`` in its directory, the object `kernelpro optimize
--json` prints as its last line, a suite ledger's result for the problem.

``graphs/run_outputs.py`` writes it at the run's end; the suite reads it back from the child's last line and from
the ledger. The file's keys are the fields' names in their order. Every field has a default, so a summary an older
version wrote (fewer keys), or the part a suite keeps of one (its ``stop_reason`` alone), reads too; keys this
version does not know are kept as they are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kernelpro.atomic_write import write_atomic

FILE_NAME = "summary.json"


class RunOutcome(BaseModel):
    """A run's outcome: its status, its best (or why none improves), where its outputs are, what it spent."""

    model_config = ConfigDict(extra="allow")

    run_id: str = ""
    status: str = ""
    """completed (every candidate judged), stopped (a budget or the user: resumable), or failed."""
    improved: bool = False
    best_speedup: float | None = None
    """The best's deciding speedup; 1.0 with no improvement (the reference stays the answer)."""
    best_speedup_ci95: list[float] | None = None
    best_variant: str | None = None
    """The best's id, or ``reference``."""
    best_candidate: str | None = None
    """The best as a standalone file, or the reference's path with no improvement."""
    no_improvement_reason: str = ""
    report: str | None = None  # report.html
    report_md: str | None = None
    candidates_judged: int = 0
    llm_cost_usd: float = 0.0
    results: str | None = None  # results.jsonl
    run_dir: str | None = None
    stop_reason: str = ""
    idea_source: str | None = None
    search_policy: str | None = None
    gpu_seconds: float = 0.0
    wall_seconds: float | None = None
    gate: str | None = None
    gate_ranking: str = ""
    gate_skipped: int = 0
    gate_saved_s: float = 0.0
    objective: str | None = None
    """time, energy or edp; None in a summary from before objectives."""
    best_energy_ratio: float | None = None
    best_energy_ci95: list[float] | None = None
    best_edp_ratio: float | None = None
    best_edp_ci95: list[float] | None = None
    best_energy_j: float | None = None
    reference_energy_j: float | None = None
    best_power_w: float | None = None
    reference_power_w: float | None = None
    correct_candidates: int = 0
    reference_host_bound: bool | None = None
    fastest_correct_speedup: float | None = None
    fastest_correct_ci95: list[float] | None = None
    reference_ms: float | None = None
    best_ms: float | None = None
    degenerate: str | None = None
    """Why the problem itself is degenerate (``reason: message``), or None."""
    scorecard: str | None = None
    best_kernelbench: dict[str, Any] | None = None
    """The best's speedup in KernelBench's convention (``speedup``, ``speedup_ci95``, ...), or None."""
    baselines: dict[str, dict[str, Any]] | None = None
    """The compile baselines the run judged first: name -> status, speedup over eager, its interval."""
    second_opinion: dict[str, Any] | None = None
    summary: str | None = None  # summary.json's own path

    @classmethod
    def of(cls, data: dict[str, Any] | None) -> RunOutcome | None:
        """The outcome a summary's object holds; None for none. A field whose value does not read as its type
        (a hand-edited file) is left at its default rather than failing the whole summary."""
        if data is None:
            return None
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            unreadable = {str(e["loc"][0]) for e in error.errors() if e["loc"]}
            return cls.model_validate({key: value for key, value in data.items() if key not in unreadable})

    @classmethod
    def from_line(cls, line: str) -> RunOutcome | None:
        """The outcome `kernelpro optimize --json` printed as ``line``; None when the line is not a JSON object."""
        try:
            data = json.loads(line)
        except ValueError:
            return None
        return cls.of(data) if isinstance(data, dict) else None

    @classmethod
    def read(cls, run_dir: Path) -> RunOutcome | None:
        """The outcome kept in ``run_dir`` (``summary.json``); None when the run has not written one."""
        try:
            data = json.loads((Path(run_dir) / FILE_NAME).read_text())
        except (OSError, ValueError):
            return None
        return cls.of(data) if isinstance(data, dict) else None

    def to_json(self) -> dict[str, Any]:
        """The summary's object: the keys it was made or read with, in the fields' order, then any unknown."""
        return self.model_dump(exclude_unset=True)

    def write(self, run_dir: Path) -> Path:
        """Write ``summary.json`` into ``run_dir`` whole (``write_atomic``); its path."""
        path = Path(run_dir) / FILE_NAME
        write_atomic(path, json.dumps(self.to_json(), indent=1, default=str))
        return path
