"""How far past its time budget a run, or a suite of runs, may end."""

from __future__ import annotations


def overrun_allowed_s(budget_s: float) -> float:
    """How far past its time budget a run may end: 2% of it, and never less than a minute (a worker stopped
    mid-job, the report written)."""
    return max(0.02 * budget_s, 60.0)
