"""The forecast gate: which of a batch's proposals deserve the GPU (the ``Gate`` port of ``harness.ports``).

- ``select``: the proposals of one expansion (same parent, same idea; ``forecast.proposals_per_expansion`` of
  them) are ranked by the run's objective's predicted reward (``forecast.objective_reward``: the expected log
  speedup under time; under energy or EDP, with a speed forecast only, equal power is assumed, which keeps the
  speed order; a forecaster's deferral first), and the top ``select_k`` are measured (GPU Forecasters' filtered
  search: forecast many mutations, measure the best few);
- ``selective``: a proposal whose forecast is confident (``confidence`` at or above ``threshold``) is accepted as
  forecast and not measured; uncertain ones, parse failures and deferrals are measured.

A proposal that is not measured is set aside with the gate's reason and its forecast; it never has a verdict, so
it is never the run's best. A forecaster that breaks measures everything: the gate is an economy, not a judge.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Literal

from kernelpro.config import CompileSettings
from kernelpro.forecast.classes import Forecast
from kernelpro.forecast.features import Inputs
from kernelpro.forecast.kernel_stats import kernel_stats
from kernelpro.forecast.objective_reward import predicted_reward, ranking_text
from kernelpro.harness.ports import Proposal
from kernelpro.problem import Problem

log = logging.getLogger(__name__)
SKIPPED = "not measured (forecast gate)"
"""How the reasons of proposals the gate set aside begin, so reports can count them."""
FIGURE = {"time": "speedup", "energy": "energy ratio", "edp": "EDP ratio"}


class ForecastGate:
    def __init__(self, forecaster, mode: Literal["select", "selective"], *, select_k: int = 1,
                 confidence: str = "max_prob", threshold: float = 0.8, bandwidth_gbs: float | None = None,
                 compile_settings: CompileSettings | None = None, objective: str = "time") -> None:
        if mode not in ("select", "selective"):
            raise ValueError(f"gate mode must be select or selective, not {mode!r}")
        self.objective = objective
        self.ranking = ranking_text(objective, mode)
        """What the choice rests on (the run's summary and report say it)."""
        self.forecaster, self.mode, self.select_k = forecaster, mode, max(1, select_k)
        self.confidence, self.threshold, self.bandwidth_gbs = confidence, threshold, bandwidth_gbs
        self.compile_settings = compile_settings  # set: the kernels' ptxas and SASS statistics are features too
        self.name = f"forecast-{mode} ({forecaster.name})"
        self.forecasts: dict[str, Forecast] = {}
        self.reasons: dict[str, str] = {}

    def choose(self, problem: Problem, proposals: Sequence[Proposal]) -> list[str]:
        self.forecasts, self.reasons = {}, {}
        stats = (kernel_stats([p.source for p in proposals], self.compile_settings) if self.compile_settings
                 else [{} for _ in proposals])
        items = [Inputs(problem.source, p.source, p.reference_ms, p.traffic_bytes, self.bandwidth_gbs, stats[i],
                        problem_name=problem.name, hardware=p.hardware) for i, p in enumerate(proposals)]
        try:
            forecasts = self.forecaster.forecast(items)
        except Exception as exc:  # noqa: BLE001 - without forecasts every proposal is measured
            log.warning("the forecaster failed, measuring every proposal: %s", exc)
            return [p.variant_id for p in proposals]
        self.forecasts = {p.variant_id: f for p, f in zip(proposals, forecasts, strict=True)}
        if self.objective != "time" and any(f.energy_ratio for f in forecasts):
            self.ranking = ranking_text(self.objective, self.mode, with_energy=True)
        chosen = self._select(proposals) if self.mode == "select" else self._selective(proposals)
        return [p.variant_id for p in proposals if p.variant_id in chosen]

    def why(self, variant_id: str) -> str:
        return self.reasons.get(variant_id, "")

    def _select(self, proposals: Sequence[Proposal]) -> set[str]:
        groups: dict[tuple[str, str], list[Proposal]] = {}
        for p in proposals:
            groups.setdefault((p.parent_id, p.idea), []).append(p)
        chosen: set[str] = set()
        for group in groups.values():
            # A deferral asks for a measurement: it goes first, then the highest predicted reward.
            ranked = sorted(group, key=lambda p: (not self.forecasts[p.variant_id].deferred,
                                                  -self._reward(p.variant_id), -p.prior))
            chosen |= {p.variant_id for p in ranked[: self.select_k]}
            cut = self._reward(ranked[min(self.select_k, len(ranked)) - 1].variant_id)
            for p in ranked[self.select_k:]:
                f = self.forecasts[p.variant_id]
                self.reasons[p.variant_id] = (
                    f"{SKIPPED}: expected class {f.expected_class:.2f}, predicted {FIGURE[self.objective]} "
                    f"{math.exp(self._reward(p.variant_id)):.2f}x, below the {self.select_k} measured of its "
                    f"expansion (from {math.exp(cut):.2f}x)")
        return chosen

    def _reward(self, variant_id: str) -> float:
        return predicted_reward(self.forecasts[variant_id], self.objective)

    def _selective(self, proposals: Sequence[Proposal]) -> set[str]:
        chosen: set[str] = set()
        for p in proposals:
            f = self.forecasts[p.variant_id]
            sure = f.confidence(self.confidence)
            if f.parse_failure or f.deferred or sure < self.threshold:
                chosen.add(p.variant_id)
            else:
                self.reasons[p.variant_id] = (f"{SKIPPED}: accepted as forecast, class {int(f.array.argmax()) + 1} "
                                              f"({self.confidence} {sure:.2f} >= {self.threshold:g}); never the best")
        return chosen


def skipped(tree) -> list:
    """The variants of a tree the gate set aside."""
    return [v for v in tree if v.gated]
