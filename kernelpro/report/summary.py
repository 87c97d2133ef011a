"""What a run reports about itself: ``RunSummary`` (the graph fills it in at the end of a run)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class RoleUsage(BaseModel):
    """LLM use of one agent role over a run."""

    model: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    priced: bool = True
    """False when the provider gave no price for the model: ``cost_usd`` is then a lower bound (often 0)."""


class RunSummary(BaseModel):
    """One optimisation run, as the report shows it."""

    run_id: str
    problem: str
    device: str
    gpu_name: str | None = None
    idea_source: Literal["llm", "recipes"]
    """``llm``: agents wrote candidates; ``recipes``: only the built-in recipes (no LLM configured)."""
    search_policy: str = ""
    """The search policy that chose what to grow (``greedy``, ``beam``, ``mcts``, ``recipes``)."""
    models: dict[str, str] = Field(default_factory=dict)
    """Model name per agent role, when the ideas came from ``llm``."""
    status: Literal["completed", "stopped", "failed"]
    stop_reason: str = ""
    started_at: datetime
    ended_at: datetime | None = None
    iterations: int = 0
    candidates_judged: int = 0
    best_variant_id: str | None = None
    best_speedup: float | None = None
    best_speedup_ci95: list[float] | None = None
    objective: str = "time"
    """What the run's best followed (``search.objective``): time, energy or edp."""
    scorecard: str = "kernelpro"
    """Which reading of the speedup decided the best under time (``search.scorecard``): kernelpro or kernelbench."""
    best_kernelbench: dict[str, Any] | None = None
    """The best's speedup in KernelBench's convention in its deciding verdict (``EvalResult.kernelbench``: its
    ``speedup``, ``speedup_ci95``, ``method``...), beside ``best_speedup``; None with no best or no such figure."""
    best_energy_ratio: float | None = None
    """The best's energy ratio (reference joules per call over its own) in its deciding verdict, when measured."""
    best_energy_ci95: list[float] | None = None
    best_edp_ratio: float | None = None
    best_edp_ci95: list[float] | None = None
    best_energy_j: float | None = None
    """The best's joules per call, and the reference's, in the deciding verdict's NVML readings."""
    reference_energy_j: float | None = None
    best_power_w: float | None = None
    """The best's average board power while it repeated, and the reference's."""
    reference_power_w: float | None = None
    second_opinion: dict[str, Any] | None = None
    """The best's speedup timed again in a fresh process by an independent method (``graphs.second_opinions``:
    ``status``, ``speedup``, ``speedup_ci95``, the judge's ``judged_speedup``...); with no best, the one that
    disputed the fastest candidate; None where none was asked for."""
    no_improvement_reason: str = ""
    """Why no candidate is the best (none correct, or none measurably faster), when none is."""
    llm_usage: dict[str, RoleUsage] = Field(default_factory=dict)
    """Per agent role (planner, coder...)."""
    gpu_seconds: float = 0.0
    gate: str = ""
    """The gate that chose what to measure (``measure_all``, or a forecast gate)."""
    gate_ranking: str = ""
    """What a forecast gate's choice rests on: predicted speed, and under an energy objective the assumption that
    makes a speed forecast an energy one (equal power), or the forecasts' own energy predictions."""
    gate_skipped: int = 0
    """Candidates written but not measured: the gate ranked them below others, or accepted their forecast."""
    gate_saved_s: float = 0.0
    """Judging time those would have taken, at the run's mean judging time per candidate."""
    baselines: dict[str, dict] = Field(default_factory=dict)
    """The ``torch.compile`` baselines the run judged before its search (``optimize --baselines``): name -> its
    status, speedup over eager and interval."""

    @property
    def wall_seconds(self) -> float | None:
        return (self.ended_at - self.started_at).total_seconds() if self.ended_at else None

    @property
    def total_usage(self) -> RoleUsage:
        roles = list(self.llm_usage.values())
        return RoleUsage(tokens_in=sum(r.tokens_in for r in roles), tokens_out=sum(r.tokens_out for r in roles),
                         cost_usd=sum(r.cost_usd for r in roles), priced=all(r.priced for r in roles))
