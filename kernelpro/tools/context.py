"""What the tools of one run share (``ToolContext``) and the shape of every tool's reply (``Reply``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelpro.config import Settings
from kernelpro.problem import Problem

Reply = tuple[str, Any]


@dataclass
class ToolContext:
    """What the tools of one run share: settings, the problem being optimised, and lazily opened backends."""

    settings: Settings
    problem: Problem | None = None
    device: str = "auto"
    run_id: str = "interactive"
    gpu: str | None = None
    evaluator: Any = None  # the session's judge (``harness.ports.Evaluator``); None: one per call, by harness.backend
    latest_profile: Path | None = None  # the CSV of the last profile taken in this run, for read_metrics
    _backends: dict[str, Any] = field(default_factory=dict)

    def backend(self, name: str, make: Callable[[], Any]) -> Any:
        """Open a backend (the CUTLASS index, the memory store) on first use and keep it for the run."""
        if name not in self._backends:
            self._backends[name] = make()
        return self._backends[name]
