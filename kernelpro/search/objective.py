"""What a run optimises: time (the speedup), energy per call, or the energy-delay product (EDP).

Every objective is a ratio of the reference's figure over the candidate's, with a 95% interval and a call, all
from the judge's ``EvalResult``: ``speedup``/``speed_verdict`` for time, ``energy_ratio``/``energy_verdict`` for
energy, ``edp_ratio``/``edp_verdict`` for EDP (``harness.energy_compare``). A candidate improves under an
objective when it is correct, measured on a quiet machine, and its call says better beyond the interval
(``faster``; ``less`` energy or EDP). Energy and EDP need NVML readings (``harness.energy``): a candidate without
them has no figure under those objectives and never improves.

Under the time objective the speedup is read in one of two scorecards (``search.scorecard``): kernelpro's own
(``speedup``) or KernelBench's convention (``kernelbench.speedup``, the mean of CUDA events with no host floor).
The figure that decides (``figure``) is then ``time`` or ``kernelbench``; a ``kernelbench`` call is made at the
run's ``harness.min_effect`` as the judge makes its own (``EvalResult.kernelbench_call``).
"""

from __future__ import annotations

from typing import Any

from kernelpro.config.harness import HarnessSettings
from kernelpro.config.search import Objective, Scorecard
from kernelpro.harness.result import EvalResult
from kernelpro.harness.timing.stats import speedup_text

OBJECTIVES: tuple[str, ...] = ("time", "energy", "edp")
SCORECARDS: tuple[str, ...] = ("kernelpro", "kernelbench")
KERNELBENCH = "kernelbench"
"""The figure of the time objective under the ``kernelbench`` scorecard."""
DEFAULT_MIN_EFFECT: float = HarnessSettings.model_fields["min_effect"].default
ENERGY_OBJECTIVES: tuple[str, ...] = ("energy", "edp")

__all__ = ["ENERGY_OBJECTIVES", "KERNELBENCH", "OBJECTIVES", "SCORECARDS", "Objective", "Scorecard", "check",
           "check_scorecard", "ci95", "energy_text", "figure", "figure_text", "improves", "joules_text", "ratio",
           "verdict"]

_FIELDS = {"time": ("speedup", "speedup_ci95", "speed_verdict", "faster"),
           "energy": ("energy_ratio", "energy_ci95", "energy_verdict", "less"),
           "edp": ("edp_ratio", "edp_ci95", "edp_verdict", "less")}



def check(objective: str) -> Objective:
    if objective not in _FIELDS:
        raise ValueError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    return objective  # type: ignore[return-value]


def check_scorecard(scorecard: str) -> Scorecard:
    if scorecard not in SCORECARDS:
        raise ValueError(f"unknown scorecard {scorecard!r}; choose one of {', '.join(SCORECARDS)}")
    return scorecard  # type: ignore[return-value]


def figure(objective: str, scorecard: str = "kernelpro") -> str:
    """The figure that decides a best: the objective's, or under time with the ``kernelbench`` scorecard the
    speedup in KernelBench's convention (``kernelbench``)."""
    check_scorecard(scorecard)
    return KERNELBENCH if check(objective) == "time" and scorecard == KERNELBENCH else objective


def _data(result: EvalResult | dict[str, Any] | None) -> dict[str, Any]:
    if result is None:
        return {}
    return result if isinstance(result, dict) else result.model_dump(mode="json")


def ratio(result: EvalResult | dict[str, Any] | None, objective: str) -> float | None:
    """The objective's ratio (reference over candidate: above 1 is better) of a correct verdict, else None."""
    data = _data(result)
    if data.get("status") != "ok" or not data.get("correct"):
        return None
    if objective == KERNELBENCH:
        return (data.get("kernelbench") or {}).get("speedup")
    return data.get(_FIELDS[objective][0])


def ci95(result: EvalResult | dict[str, Any] | None, objective: str) -> list[float] | None:
    if objective == KERNELBENCH:
        return (_data(result).get("kernelbench") or {}).get("speedup_ci95")
    return _data(result).get(_FIELDS[objective][1])


def verdict(result: EvalResult | dict[str, Any] | None, objective: str,
            min_effect: float = DEFAULT_MIN_EFFECT) -> str | None:
    """``faster``/``slower``/``same``/``uncertain`` for time (and ``kernelbench``, called at ``min_effect``);
    ``less``/``more``/``same``/``uncertain`` otherwise."""
    data = _data(result)
    if objective == KERNELBENCH:
        return EvalResult.model_validate(data).kernelbench_call(min_effect) if data else None
    found = data.get(_FIELDS[objective][2])
    if found is None and objective == "edp":  # verdicts recorded before EvalResult carried edp_verdict
        found = ((data.get("details") or {}).get("energy") or {}).get("edp", {}).get("verdict")
    return found


def improves(result: EvalResult | dict[str, Any] | None, objective: str,
             min_effect: float = DEFAULT_MIN_EFFECT) -> bool:
    """Correct, on a quiet machine, and better than the reference beyond the interval under ``objective``
    (under ``kernelbench``: ``EvalResult.improves_under`` that scorecard at ``min_effect``)."""
    data = _data(result)
    if objective == "time":
        return result is not None and EvalResult.model_validate(data).improves
    if objective == KERNELBENCH:
        return result is not None and EvalResult.model_validate(data).improves_under(KERNELBENCH, min_effect)
    return data.get("status") == "ok" and bool(data.get("correct")) and not data.get("contended") and \
        verdict(data, objective) == _FIELDS[objective][3]


def figure_text(result: EvalResult | dict[str, Any] | None, objective: str) -> str:
    """The objective's figure with its interval: ``1.52x [1.49-1.55]`` for time, ``energy 1.12x [1.05-1.19]
    less`` for energy (the reference's joules over the candidate's), ``EDP ...`` likewise; "-" when unmeasured."""
    value = ratio(result, objective)
    if objective == "time":
        return speedup_text(value, ci95(result, objective))
    if objective == KERNELBENCH:
        return f"KernelBench convention {speedup_text(value, ci95(result, objective))}" if value is not None \
            else "KernelBench convention not measured"
    if value is None:
        return f"{'energy' if objective == 'energy' else 'EDP'} not measured"
    call = verdict(result, objective) or ""
    name = "energy" if objective == "energy" else "EDP"
    return f"{name} {speedup_text(value, ci95(result, objective))} {call}".rstrip()


def energy_text(result: EvalResult | dict[str, Any] | None) -> str:
    """Joules per call and watts of candidate and reference, and the energy and EDP ratios with their intervals,
    when the verdict carries NVML readings; empty otherwise."""
    data = _data(result)
    if data.get("energy_ratio") is None:
        return ""
    cand, ref = data.get("candidate") or {}, data.get("reference") or {}
    parts = []
    if cand.get("energy_j") is not None and ref.get("energy_j") is not None:
        parts.append(f"{joules_text(cand['energy_j'])}/call at {cand.get('power_w') or 0:.0f} W vs reference "
                     f"{joules_text(ref['energy_j'])}/call at {ref.get('power_w') or 0:.0f} W")
    parts.append(f"energy {speedup_text(data['energy_ratio'], data.get('energy_ci95'))} "
                 f"{data.get('energy_verdict') or ''}".rstrip())
    if data.get("edp_ratio") is not None:
        parts.append(f"EDP {speedup_text(data['edp_ratio'], data.get('edp_ci95'))} "
                     f"{verdict(data, 'edp') or ''}".rstrip())
    return "; ".join(parts)


def joules_text(value: float) -> str:
    """Joules per call in a readable unit: 1.16 J, 3.2 mJ, 45 uJ."""
    for scale, unit in ((1.0, "J"), (1e-3, "mJ"), (1e-6, "uJ")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} nJ"
