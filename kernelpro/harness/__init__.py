"""Judging one candidate: load, run in a sandboxed worker, verify, time, guard.

``harness.judge`` is the entry point; nothing here knows about LLMs. The package imports nothing itself:
importing a light module of it (``result``, ``cpu_load``) must not import torch, which the command line's quick
commands (``--help``, ``suite status``) never need.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {"EvalResult": "kernelpro.harness.result", "GuardFinding": "kernelpro.harness.result",
            "Timing": "kernelpro.harness.result"}
__all__ = ["EvalResult", "GuardFinding", "Timing"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'kernelpro.harness' has no attribute {name!r}")
