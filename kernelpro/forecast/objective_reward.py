"""A forecast read as the run's objective's predicted reward: what the forecast gate ranks proposals by.

The search's reward is the logarithm of the objective's ratio, reference over candidate (``search.rewards``):
the speedup under ``time``, the energy ratio under ``energy``, the energy-delay product's under ``edp``. A
forecast's classes are of speed, so its predicted reward under time is its expected log speedup (over the
classes' representative speedups, in the same order as its expected class). Under ``energy`` and ``edp``, with
only a speed forecast, the honest rule is to assume equal power: joules per call then scale with time, so the
energy ratio is the time ratio and the EDP ratio its square. Both keep the speed order, and the run says so.
A forecast that carries its own energy prediction (``Forecast.energy_ratio``) is read with it instead.
"""

from __future__ import annotations

import math

import numpy as np

from kernelpro.forecast.classes import CLASS_SPEEDUP, Forecast

EQUAL_POWER = {"energy": "under energy this assumes equal power (energy ratio = time ratio)",
               "edp": "under edp this assumes equal power (EDP ratio = time ratio squared)"}


def predicted_reward(forecast: Forecast, objective: str) -> float:
    """The objective's expected log ratio (reference over candidate; above 0 is better) the forecast predicts."""
    log_speedup = float(np.dot(forecast.array, np.log(CLASS_SPEEDUP)))
    if objective == "time":
        return log_speedup
    log_energy = math.log(forecast.energy_ratio) if forecast.energy_ratio else log_speedup  # equal power
    if objective == "energy":
        return log_energy
    if objective == "edp":  # energy times time: the ratios multiply
        return log_energy + log_speedup
    raise ValueError(f"unknown objective {objective!r}; choose one of time, energy, edp")


def ranking_text(objective: str, mode: str = "select", with_energy: bool = False) -> str:
    """What the gate's choice rests on under ``objective``, for the run's summary and report."""
    how = "ranked by predicted speed" if mode == "select" else \
        "confident forecasts accepted unmeasured, uncertain ones measured; the forecasts are of speed"
    if objective == "time":
        return how
    if with_energy:
        target = "energy ratio" if objective == "energy" else "energy ratio times speedup (EDP)"
        return f"ranked by the forecasts' predicted {target}" if mode == "select" else \
            f"{how}, with the forecasts' own energy predictions"
    return f"{how}; {EQUAL_POWER[objective]}"
