"""A suite's budgets and each problem's share of them.

Suite budgets (wall time, GPU time, model dollars) are totals. When a problem starts it gets what is left
divided by the problems left (times the lanes running at once, for wall time), so what one problem does not
spend goes to the next; a per-problem budget caps that share. When a total is spent, no new problem starts.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

KINDS = {"time": "time_s", "gpu": "gpu_s", "usd": "usd"}


class BudgetError(ValueError):
    """A budget written in a way that cannot be read."""


def seconds(text: str | None) -> float | None:
    """'90', '90s', '15m', '2h', '1h30m' -> seconds; None stays None."""
    if text is None:
        return None
    cleaned = re.sub(r"\s+", "", str(text).strip().lower())
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms]?)", cleaned)
    if not parts or "".join(n + u for n, u in parts) != cleaned:
        raise BudgetError(f"{text!r} is not a duration; use e.g. 90s, 15m, 2h or 1h30m")
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1, "": 1}[u] for n, u in parts)


class Limits(BaseModel):
    """Wall seconds, GPU seconds and dollars; None is no limit."""

    time_s: float | None = None
    gpu_s: float | None = None
    usd: float | None = None


def parse_per_problem(text: str | None) -> Limits:
    """``--per-problem-budget``: ``time=10m,gpu=5m,usd=0.5`` (any of them), or one duration for wall time."""
    if text is None or not text.strip():
        return Limits()
    limits: dict[str, float | None] = {}
    for part in text.split(",") if "=" in text else [f"time={text}"]:
        name, _, value = part.partition("=")
        name = name.strip().lower()
        if name not in KINDS or not value.strip():
            raise BudgetError(f"--per-problem-budget {text!r}: {part.strip()!r} is not time=..., gpu=... or usd=...")
        try:
            limits[KINDS[name]] = float(value) if name == "usd" else seconds(value)
        except ValueError as error:
            raise BudgetError(f"--per-problem-budget {text!r}: {error}") from error
        if not limits[KINDS[name]] > 0:  # a share that allows nothing, not a share spent at once
            raise BudgetError(f"--per-problem-budget {text!r}: {name} must be above 0")
    return Limits(**limits)


def _share(total: float | None, spent: float, left: int, cap: float | None) -> float | None:
    if total is None:
        return cap
    share = max(0.0, total - spent) / max(1, left)
    return share if cap is None else min(share, cap)


def _weighted(total: float | None, spent: float, weight: float, weight_left: float, cap: float | None
              ) -> float | None:
    if total is None:
        return cap
    share = max(0.0, total - spent) * weight / max(weight, weight_left)
    return share if cap is None else min(share, cap)


def share(totals: Limits, per_problem: Limits, spent: Limits, problems_left: int, lanes: int,
          weight: float | None = None, weight_left: float | None = None) -> Limits:
    """One starting problem's budgets: what is left of each total over the problems left, capped per problem.
    Wall time is shared among the problems one lane will run, since ``lanes`` problems run at once.

    With a ``weight`` (``--overnight``: the problem's estimated cost) and ``weight_left`` (the weights of the
    problems left, its own included), wall and GPU time are shared in proportion to the weights instead; model
    dollars stay equal, since a problem's model calls follow its candidates, not its size."""
    per_lane = max(1, -(-problems_left // max(1, lanes)))
    if weight is not None and weight_left is not None and weight > 0:
        time_s = _weighted(totals.time_s, spent.time_s or 0.0, weight, weight_left / max(1, lanes),
                           per_problem.time_s)
        gpu_s = _weighted(totals.gpu_s, spent.gpu_s or 0.0, weight, weight_left, per_problem.gpu_s)
    else:
        time_s = _share(totals.time_s, spent.time_s or 0.0, per_lane, per_problem.time_s)
        gpu_s = _share(totals.gpu_s, spent.gpu_s or 0.0, problems_left, per_problem.gpu_s)
    return Limits(time_s=time_s, gpu_s=gpu_s, usd=_share(totals.usd, spent.usd or 0.0, problems_left, per_problem.usd))


def spent_reason(totals: Limits, spent: Limits) -> str | None:
    """Why no further problem may start (a total is spent), or None."""
    for name, label, unit in (("time_s", "time", "s"), ("gpu_s", "GPU", "s"), ("usd", "model", "$")):
        total, used = getattr(totals, name), getattr(spent, name) or 0.0
        if total is not None and used >= total:
            amount = f"${used:.2f} of ${total:.2f}" if unit == "$" else f"{used:.0f} s of {total:.0f} s"
            return f"suite {label} budget spent ({amount})"
    return None
