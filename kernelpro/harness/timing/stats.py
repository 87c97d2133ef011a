"""How sure a speedup is: a bootstrap interval over the paired rounds of timing, and the call it supports.

The reference and the candidate are timed in alternating rounds (see ``timing.run_timing``), so round ``i`` of
one and round ``i`` of the other saw the same state of the host and the card. The speedup is taken inside
those pairs: each block of two consecutive rounds (one with the reference first, one with the candidate
first, so the order's own effect cancels) gives the geometric mean of its two ratios, and the speedup is the
median of the blocks' ratios. The interval resamples runs of consecutive blocks (a moving-block percentile
bootstrap whose run length follows the blocks' own autocorrelation, as consecutive rounds may share the host's
state), which needs no assumption about the shape of the
distribution; GPU timings have a long right tail.

Why not the ratio of the two models' medians: on the H200 host we measured, the host's speed switches between
states 2-3x apart from one fraction of a second to the next (``benchmarks/results/host_drift_h200.json``), and
a host-bound model's samples are then bimodal. Each model's median lands somewhere between the two modes,
and not at the same place for both, so self against self read up to 1.05-1.06; a ratio inside a pair sees
one state and stays put.

The interval of one job's rounds is then widened by the spread between identical jobs (``with_job_spread``),
which no number of rounds inside a job can show.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

SpeedVerdict = Literal["faster", "slower", "same", "uncertain"]

RESAMPLES = 2000


@dataclass(frozen=True)
class SpeedupEstimate:
    """The median paired ratio (reference over candidate), its 95% interval, and the call it supports."""

    speedup: float
    low: float
    high: float
    verdict: SpeedVerdict

    @property
    def relative_width(self) -> float:
        """The interval's width over the estimate: 0.02 means the speedup is known to about +-1%."""
        return (self.high - self.low) / self.speedup if self.speedup > 0 else float("inf")


def block_ratios(reference_ms: Sequence[float], candidate_ms: Sequence[float]) -> np.ndarray:
    """Reference over candidate per block of two consecutive rounds (the geometric mean of the two rounds'
    ratios); a single round is its own block, and an odd last round is left out.

    The sequences are the models' samples in round order; when their lengths differ (a call that failed its
    check ends a round early) the shorter one sets the number of pairs.
    """
    n = min(len(reference_ms), len(candidate_ms))
    if n == 0:
        raise ValueError("no timed rounds to estimate a speedup from")
    ref = np.asarray(reference_ms[:n], dtype=np.float64)
    ratios = ref / np.maximum(np.asarray(candidate_ms[:n], dtype=np.float64), 1e-9)
    if n == 1:
        return ratios
    even = n // 2 * 2
    return np.sqrt(ratios[0:even:2] * ratios[1:even:2])


def run_length(blocks: np.ndarray) -> int:
    """How many consecutive blocks to resample together: 1 when neighbouring blocks' ratios are uncorrelated,
    longer as they are (the AR(1) plug-in rule for a moving-block bootstrap, ``(2r / (1 - r^2))^(2/3) m^(1/3)``
    for a lag-1 autocorrelation ``r``, Buhlmann and Kunsch)."""
    m = len(blocks)
    if m < 8 or not np.all(blocks > 0):  # a zero-time sample (a clock's floor) has no log: no run length to fit
        return 1
    centred = np.log(blocks) - np.log(blocks).mean()
    denominator = float(np.dot(centred, centred))
    r = float(np.dot(centred[:-1], centred[1:])) / denominator if denominator > 0 else 0.0
    if not r > 0.0:
        return 1
    r = min(r, 0.95)
    return int(min(m // 2, max(1, math.ceil((2 * r / (1 - r * r)) ** (2 / 3) * m ** (1 / 3)))))


def _moving_block_picks(m: int, run: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of a moving-block bootstrap (Kunsch, 1989): runs of ``run`` consecutive blocks, laid end to end
    to length ``m``. Consecutive rounds share the host's state (it switched speed only every few hundred
    milliseconds on the H200 host measured), so their ratios need not be independent; resampling them one by
    one then makes the interval too narrow (self against self on the H200: 10 of 12 intervals held 1)."""
    runs = math.ceil(m / run)
    starts = rng.integers(0, m - run + 1, size=(resamples, runs))
    return (starts[:, :, None] + np.arange(run)).reshape(resamples, runs * run)[:, :m]


def speedup_interval(reference_ms: Sequence[float], candidate_ms: Sequence[float], *, confidence: float = 0.95,
                     resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float, float]:
    """The median of the paired blocks' ratios (see ``block_ratios``) and its moving-block bootstrap interval."""
    blocks = block_ratios(reference_ms, candidate_ms)
    estimate = float(np.median(blocks))
    if len(blocks) == 1:
        return estimate, estimate, estimate
    picks = _moving_block_picks(len(blocks), run_length(blocks), resamples, np.random.default_rng(seed))
    medians = np.median(blocks[picks], axis=1)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    # The percentile interval of a median can sit beside the point estimate when few samples are tied; it
    # always contains it here.
    return estimate, float(min(low, estimate)), float(max(high, estimate))


def speed_call(speedup: float, low: float, high: float, min_effect: float) -> SpeedVerdict:
    """Faster, slower, the same, or impossible to call, at a minimum effect of ``min_effect`` (0.02: 2%).

    - faster: the whole interval lies above 1 and the estimate is at least ``1 + min_effect``;
    - slower: the whole interval lies below 1 and the estimate is at most ``1 / (1 + min_effect)``;
    - same: neither, and the interval is no wider than the band ``[1/(1+m), 1+m]``, so a gain or loss of the
      minimum effect would have shown;
    - uncertain: neither, and the interval is wider than that band: the spread makes any call impossible.
    """
    band = 1.0 + min_effect
    if low > 1.0 and speedup >= band:
        return "faster"
    if high < 1.0 and speedup <= 1.0 / band:
        return "slower"
    if high / max(low, 1e-12) <= band * band:
        return "same"
    return "uncertain"


Z95 = 1.959964  # the standard normal's 97.5 % point


def with_job_spread(speedup: float, low: float, high: float, job_spread: float) -> tuple[float, float]:
    """The interval widened by the spread between identical jobs: each side's log distance from the estimate
    and ``Z95 * job_spread`` added in quadrature (a sampling error and an independent one between jobs).

    The rounds of one job share its state: the placement of the two models' objects and memory, the host's
    speed for the job's few seconds. Self against self on the H200, the intervals of the rounds alone held 1 in
    14 of 18 host-bound jobs, whose figures moved by about 0.5 % from job to job
    (``benchmarks/results/judge_noise_h200_persistent_refill.json``); widened, 46 of 48 over eight problems
    (``judge_noise_h200_job_spread.json``)."""
    if job_spread <= 0 or speedup <= 0 or low <= 0:
        return low, high
    floor = (Z95 * job_spread) ** 2
    below = math.sqrt(math.log(speedup / low) ** 2 + floor)
    above = math.sqrt(math.log(high / speedup) ** 2 + floor)
    return speedup * math.exp(-below), speedup * math.exp(above)


def estimate_speedup(reference_ms: Sequence[float], candidate_ms: Sequence[float], min_effect: float,
                     seed: int = 0, job_spread: float = 0.0) -> SpeedupEstimate:
    """The speedup, its 95 % interval (the rounds' bootstrap widened by ``job_spread``, see
    ``with_job_spread``) and the call that interval supports."""
    speedup, low, high = speedup_interval(reference_ms, candidate_ms, seed=seed)
    low, high = with_job_spread(speedup, low, high, job_spread)
    return SpeedupEstimate(speedup, low, high, speed_call(speedup, low, high, min_effect))


CALL_WORDS: dict[str, str] = {"faster": "faster", "slower": "slower", "same": "no measurable gain",
                              "uncertain": "too noisy to call"}
"""How a call reads in events, prompts and memory lessons."""


def _number(value: float) -> str:
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def speedup_text(speedup: float | None, ci95: Sequence[float] | None = None) -> str:
    """2.31x, 0.85x, 0.0032x (two decimals unless that would read as zero), with its interval when known
    (``1.52x [1.49-1.55]``; an interval too narrow for two decimals gets as many as part its ends, up to four:
    ``1.327x [1.325-1.328]``), or "-" when there is none."""
    if speedup is None:
        return "-"
    if ci95 and min(ci95) >= 0.1 and ci95[1] > ci95[0] and _number(ci95[0]) == _number(ci95[1]):
        places = next((n for n in (3, 4) if f"{ci95[0]:.{n}f}" != f"{ci95[1]:.{n}f}"), 4)
        return f"{speedup:.{places}f}x [{ci95[0]:.{places}f}-{ci95[1]:.{places}f}]"
    text = f"{_number(speedup)}x"
    if ci95:
        text += f" [{_number(ci95[0])}-{_number(ci95[1])}]"
    return text


@dataclass(frozen=True)
class Measured:
    """A figure as a report states it, with its 95% interval (low == high == value when exact, as a kept
    reference's 1x is): a run's best, a baseline, a suite problem's speedup; ``over`` divides two of them."""

    value: float
    low: float
    high: float

    @classmethod
    def of(cls, value: float, interval: Sequence[float] | None) -> Measured:
        """``value`` with ``interval``, or exact without one (a kept reference). An interval that does not
        contain the value (rounded figures) is widened to it."""
        if not interval or len(interval) != 2 or min(interval) <= 0:
            return cls(value, value, value)
        return cls(value, min(interval[0], value), max(interval[1], value))

    @property
    def log_se(self) -> float:
        return (math.log(self.high) - math.log(self.low)) / (2 * Z95)

    def over(self, other: Measured) -> Measured:
        """This speedup divided by ``other`` (an independent measurement): log errors in quadrature."""
        value = self.value / other.value
        spread = Z95 * math.hypot(self.log_se, other.log_se)
        return Measured(value, value * math.exp(-spread), value * math.exp(spread))
