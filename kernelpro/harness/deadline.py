"""The wall-time limit of one job, from the judge's side: fixed while the candidate loads, then fitted to the problem.

Loading and building a candidate may compile for a minute, so until its first call only ``timeout_s`` applies.
The worker reports how long the reference's first call took (``{"reference_call_s": ...}``, before any
candidate code runs). From the candidate's first call on, the job has ``timeout_reference_factor`` times what
every planned call of both models would take at that speed, at least ``timeout_floor_s`` beyond timing's own
cap (``timing_budget_s``), and never more than
``timeout_s`` from the start: a hang on a millisecond problem ends after the floor, a slow model gets its time.
Time the worker reports compiling (``{"compiling": true}`` until ``false``; ``compile_watch``) after the first
call began moves the fitted limit on by as much: a lazy ``torch.compile`` autotuning on its first call is not a
hang, and still stops at the cap. Time the judge spends waiting for the device alone, mid-job (``pause``), is
not the job's either: it moves both limits on. A caller may set an end of its own (``until``, a run's time
budget): the job stops there whatever its own limits, and ``by_caller`` says so.
"""

from __future__ import annotations

import time
from typing import Any

from kernelpro.config import HarnessSettings

FIRST_CALL_PHASE = "correctness trial 1/"


def planned_calls(settings: HarnessSettings) -> int:
    """Calls of both models the judge makes at most: trials, the oracle, the stream check, warm-up, timing."""
    per_model = settings.correctness_trials + settings.scaled_trials + 2 + settings.warmup + settings.timing_trials
    return 2 * per_model


class Deadline:
    """When one job's time is up. ``observe`` each message the worker sends; ``expired`` says if it is over."""

    def __init__(self, settings: HarnessSettings, started: float | None = None, until: float | None = None) -> None:
        self.settings = settings
        self.started = time.monotonic() if started is None else started
        self.until = until  # the caller's own end, a time.monotonic() instant
        self.reference_call_s: float | None = None
        self.run_started: float | None = None
        self.run_limit_s: float | None = None
        self.compiled_s = 0.0  # compiling, after the first call began
        self.compiling_since: float | None = None
        self.paused_s = 0.0  # waiting for the device, which the job does not control

    def pause(self, seconds: float) -> None:
        """Give the job ``seconds`` more: the judge made it wait that long."""
        self.paused_s += max(0.0, seconds)

    def observe(self, message: dict[str, Any], now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        compiling = message.get("compiling")
        if compiling is True and self.compiling_since is None:
            self.compiling_since = now
        elif compiling is False and self.compiling_since is not None:
            self.compiled_s += self._compiling_after_first_call(now)
            self.compiling_since = None
        value = message.get("reference_call_s")
        if isinstance(value, (int, float)) and value >= 0:
            self.reference_call_s = float(value)
        if self.run_started is None and str(message.get("phase", "")).startswith(FIRST_CALL_PHASE):
            self.run_started = now
            if self.reference_call_s is not None:
                s = self.settings
                fitted = s.timeout_reference_factor * self.reference_call_s * planned_calls(s)
                if s.energy:
                    # every reading runs on to the counter's next tick, up to about 100 ms past its time
                    fitted += 2 * s.energy_repeats * (s.energy_seconds + 0.2)
                # timing stops itself at its own cap, which a slow host can reach on any problem
                self.run_limit_s = max(s.timeout_floor_s + s.timing_budget_s, fitted)

    def _compiling_after_first_call(self, now: float) -> float:
        if self.compiling_since is None or self.run_started is None:
            return 0.0
        return max(0.0, now - max(self.compiling_since, self.run_started))

    def at(self, now: float | None = None) -> float:
        """The monotonic time at which the job is stopped, as it stands at ``now``."""
        own = self._own_end(now)
        return own if self.until is None else min(own, self.until)

    def by_caller(self, now: float | None = None) -> bool:
        """The caller's ``until`` comes before the job's own limits: what stops it is not the candidate's doing."""
        return self.until is not None and self.until < self._own_end(now)

    def _own_end(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        cap = self.started + self.settings.timeout_s + self.paused_s
        if self.run_started is None or self.run_limit_s is None:
            return cap
        compiled = self.compiled_s + self._compiling_after_first_call(now)
        return min(cap, self.run_started + self.run_limit_s + compiled + self.paused_s)

    def expired(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        return now > self.at(now)

    def describe(self, now: float | None = None) -> str:
        """The limit that applied, for the timeout's message."""
        now = time.monotonic() if now is None else now
        if self.by_caller(now):
            return "before the caller's deadline (the run's time budget)"
        cap = self.started + self.settings.timeout_s + self.paused_s
        if self.run_started is None or self.run_limit_s is None or self.at(now) >= cap:
            return f"within {self.settings.timeout_s:g} s (harness.timeout_s)"
        compiled = self.compiled_s + self._compiling_after_first_call(now)
        spent = f", {compiled:.3g} s of compiling not counted" if compiled >= 0.05 else ""
        return (f"within {self.run_limit_s:.3g} s of the candidate's first call{spent} (the reference takes "
                f"{self.reference_call_s * 1e3:.3g} ms a call; harness.timeout_floor_s, "
                "harness.timeout_reference_factor)")
