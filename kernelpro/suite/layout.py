"""A suite on disk and what it was asked to do.

``<runs_dir>/<suite-id>/``: ``ledger.sqlite``, ``runs/<run-id>/`` (one optimisation run per problem, as
``kernelpro optimize`` writes it), ``logs/`` (each child's stderr and stdout), ``suite.html``, ``suite.md`` and
their plots.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from kernelpro.suite.budget import Limits
from kernelpro.suite.ledger import Ledger, LedgerError
from kernelpro.suite.overnight import OvernightPlan
from kernelpro.suite.sources import ProblemRef


class SuiteConfig(BaseModel):
    """What ``suite run`` was asked for; kept in the ledger, so ``--resume`` needs nothing else."""

    sources: list[str]
    levels: list[int] = Field(default_factory=list)
    tasks: str | None = None
    device: str = "auto"
    policy: str | None = None
    objective: str | None = None
    """``--objective`` of every run (``search.objective`` when None)."""
    model: str | None = None
    max_iters: int = 8
    totals: Limits = Field(default_factory=Limits)
    per_problem: Limits = Field(default_factory=Limits)
    baselines: list[str] = Field(default_factory=lambda: ["eager"])
    no_memory: bool = False
    no_profile: bool = False
    ray: str | None = None
    environment: dict[str, str] = Field(default_factory=dict)
    """The ``KERNELPRO_*`` settings of the shell that started it, credentials left out (``recorded_env``):
    ``--resume`` restores those the resuming shell does not set."""
    overnight: OvernightPlan | None = None
    """``--overnight``'s plan (``suite/overnight.py``), made once with the suite: its problems are in the ledger in
    the plan's order, and ``--resume`` keeps the order, the shares and the projection."""


@dataclass(frozen=True)
class SuitePaths:
    root: Path

    @property
    def suite_id(self) -> str:
        return self.root.name

    @property
    def ledger(self) -> Path:
        return self.root / "ledger.sqlite"

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def html(self) -> Path:
        return self.root / "suite.html"

    @property
    def markdown(self) -> Path:
        return self.root / "suite.md"


def new_suite_id() -> str:
    return f"suite-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


def run_id_for(suite_id: str, index: int, key: str) -> str:
    """The optimisation run's id of problem ``index``: chosen before the run starts, so a resume finds it."""
    stem = "".join(c if c.isalnum() or c in "-_" else "-" for c in key.split("/")[-1])[:40].strip("-") or "problem"
    return f"{suite_id.removeprefix('suite-')}-p{index:03d}-{stem}"


def create_suite(runs_dir: Path, config: SuiteConfig, problems: list[ProblemRef], suite_id: str | None = None
                 ) -> tuple[SuitePaths, Ledger]:
    """A new suite directory and its ledger, every problem pending with its run id."""
    paths = SuitePaths(Path(runs_dir) / (suite_id or new_suite_id()))
    ledger = Ledger.create(paths.ledger, paths.suite_id, config.model_dump(), problems)
    for index, ref in enumerate(problems):
        ledger.update(ref.key, run_id=run_id_for(paths.suite_id, index, ref.key))
    return paths, ledger


def open_suite(runs_dir: Path, suite_id: str) -> tuple[SuitePaths, Ledger]:
    paths = SuitePaths(Path(runs_dir) / suite_id)
    if not paths.ledger.exists():
        known = sorted(p.parent.name for p in Path(runs_dir).glob("*/ledger.sqlite"))[-5:]
        raise LedgerError(f"no suite {suite_id!r} in {runs_dir}; suites there: {', '.join(known) or 'none'}")
    return paths, Ledger.open(paths.ledger)
