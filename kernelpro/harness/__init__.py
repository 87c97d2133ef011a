"""Judging one candidate: load, run in a sandboxed worker, verify, time, guard.

``judge`` is the entry point; nothing here knows about LLMs.
"""

from kernelpro.harness.judge import judge
from kernelpro.harness.result import EvalResult, GuardFinding, Timing

__all__ = ["EvalResult", "GuardFinding", "Timing", "judge"]
