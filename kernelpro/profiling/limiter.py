"""What limits a kernel, read from its metrics alone: what a hot kernel gets when no diagnoser's rule names a
specific cause.

Four readings, the most telling first: its roofline position (the nearest roof and how far the others are), the
limiter ncu's speed of light names (SM against memory throughput, the busiest pipe), achieved against theoretical
occupancy, and the top warp stall reasons with what to try for each. Each reading is left out when its metrics
were not collected; a kernel with none of them is told which profile would say more.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from kernelpro.profiling.diagnosers.compute import hottest_math_pipe
from kernelpro.profiling.diagnosers.signals import (
    ACHIEVED_OCCUPANCY_PCT,
    BUSY_PCT,
    MEMORY_PCT,
    SM_PCT,
    THEORETICAL_OCCUPANCY_PCT,
    pct,
    stall_shares,
)
from kernelpro.profiling.metrics import KernelMetrics
from kernelpro.profiling.roofline import Roofline
from kernelpro.profiling.roofs import ROOF_ADVICE, ROOF_LABELS
from kernelpro.profiling.stall_advice import stall_meaning

LSU_PIPE = "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed"
TOP_STALLS = 3
# Below half of the warp slots, occupancy is worth raising for a latency-bound kernel; achieved under 80% of
# theoretical means blocks finish unevenly or the last wave is partial.
LOW_THEORETICAL_PCT = 50.0
ACHIEVED_SHARE_MIN = 0.8
# "not_selected" means another warp issued: the SM was busy, not waiting. It is reported, never the headline.
_BUSY_NOT_WAITING = "not_selected"


class LimiterReading(BaseModel):
    topic: str  # roofline, speed_of_light, occupancy, stalls
    text: str
    advice: list[str] = Field(default_factory=list)


class Limiter(BaseModel):
    title: str
    readings: list[LimiterReading] = Field(default_factory=list)  # most telling first

    def render_lines(self) -> list[str]:
        lines = [f"What limits it (no diagnoser's rule named a specific cause): {self.title}"]
        for number, reading in enumerate(self.readings, 1):
            lines.append(f"   {number}. {reading.text}")
            lines += [f"      - {advice}" for advice in reading.advice]
        return lines


def read_limiter(k: KernelMetrics, roofline: Roofline) -> Limiter:
    readings = {reading.topic: reading for reading in (_roofline(roofline), _speed_of_light(k),
                                                       _occupancy(k), _stalls(k)) if reading is not None}
    level = roofline.roof_pct
    if roofline.roof and level is not None and level >= BUSY_PCT:
        label = ROOF_LABELS[roofline.roof].format(precision=roofline.precision)
        title, order = f"bound by {label} at {pct(level)} of peak.", ("roofline", "speed_of_light", "stalls",
                                                                     "occupancy")
    elif waiting := next((s for s in _ranked_stalls(k) if s[0] != _BUSY_NOT_WAITING), None):
        reason, share = waiting
        busiest = f" (the busiest roof at {pct(level)} of peak)" if level is not None else ""
        title = (f"latency-bound: nothing is near its roof{busiest}; warps stall most on {reason} "
                 f"({share:.0%} of stall cycles), waiting for {stall_meaning(reason)[0]}.")
        order = ("stalls", "occupancy", "speed_of_light", "roofline")
    elif roofline.roof and level is not None:
        label = ROOF_LABELS[roofline.roof].format(precision=roofline.precision)
        title = f"nothing is near its roof; the closest is {label} at {pct(level)} of peak."
        order = ("roofline", "speed_of_light", "occupancy", "stalls")
    elif readings:
        title, order = "only part of its limiter is measured:", ("speed_of_light", "occupancy", "stalls", "roofline")
    else:
        return Limiter(title="unmeasured: the profile holds no throughput, occupancy or stall metrics for it; "
                             "profile it with every section (`kernelpro profile` without --quick) to see its limiter.")
    return Limiter(title=title, readings=[readings[topic] for topic in order if topic in readings])


def _roofline(r: Roofline) -> LimiterReading | None:
    if not r.roof or r.roof_pct is None:
        return None
    label = ROOF_LABELS[r.roof].format(precision=r.precision)
    others = [f"{ROOF_LABELS[name].format(precision=r.precision)} {pct(level)}"
              for name, level in sorted(r.roofs.items(), key=lambda item: -item[1]) if name != r.roof]
    text = (f"Roofline: nearest roof {label} at {pct(r.roof_pct)} of peak ({pct(max(0.0, 100 - r.roof_pct))} from "
            "it)" + (f"; the others: {', '.join(others)}" if others else "") + ".")
    if r.roof_pct >= BUSY_PCT:
        return LimiterReading(topic="roofline", text=text, advice=list(ROOF_ADVICE[r.roof]))
    return LimiterReading(topic="roofline", text=text + " Far from every roof, the time goes to waiting, not to "
                          "moving bytes or doing math.")


def _speed_of_light(k: KernelMetrics) -> LimiterReading | None:
    sm, memory = k.get(SM_PCT), k.get(MEMORY_PCT)
    parts = []
    if sm is not None and memory is not None:
        side = "memory" if memory > sm else "compute (SM)"
        parts.append(f"SM {pct(sm)} against memory {pct(memory)} of peak, the {side} side leads")
    elif sm is not None or memory is not None:
        parts.append(f"{'SM' if sm is not None else 'memory'} {pct(sm if sm is not None else memory or 0.0)} of peak")
    pipes = []
    if (hottest := hottest_math_pipe(k)) is not None:
        pipes.append((hottest[0], hottest[2]))
    if (lsu := k.get(LSU_PIPE)) is not None:
        pipes.append(("load/store (LSU)", lsu))
    if pipes:
        name, busy = max(pipes, key=lambda pipe: pipe[1])
        parts.append(f"the busiest pipe is {name} at {pct(busy)}")
    return LimiterReading(topic="speed_of_light", text="Speed of light: " + "; ".join(parts) + ".") if parts else None


def _occupancy(k: KernelMetrics) -> LimiterReading | None:
    achieved, theoretical = k.get(ACHIEVED_OCCUPANCY_PCT), k.get(THEORETICAL_OCCUPANCY_PCT)
    if achieved is None:
        return None
    text = f"Occupancy: {pct(achieved)} of warp slots filled" + (
        f" against a theoretical {pct(theoretical)}" if theoretical is not None else "") + "."
    advice = []
    if theoretical is not None and theoretical < LOW_THEORETICAL_PCT:
        advice.append("The theoretical limit is low: fewer registers per thread (__launch_bounds__), less shared "
                      "memory per block or a different block size lets more warps hide latency.")
    elif theoretical and achieved < ACHIEVED_SHARE_MIN * theoretical:
        advice.append("Achieved is well below theoretical: blocks finish unevenly or the last wave is partial; "
                      "more, smaller blocks or a grid-stride loop even it out.")
    return LimiterReading(topic="occupancy", text=text, advice=advice)


def _ranked_stalls(k: KernelMetrics) -> list[tuple[str, float]]:
    shares = stall_shares(k) or {}
    return sorted(shares.items(), key=lambda item: -item[1])[:TOP_STALLS]


def _stalls(k: KernelMetrics) -> LimiterReading | None:
    top = _ranked_stalls(k)
    if not top:
        return None
    text = "Warp stalls, ranked: " + ", ".join(f"{reason} {share:.0%}" for reason, share in top) + \
        " of stall cycles."
    advice = [f"{reason} (waiting for {stall_meaning(reason)[0]}): {stall_meaning(reason)[1]}."
              for reason, _ in top]
    return LimiterReading(topic="stalls", text=text, advice=advice)
