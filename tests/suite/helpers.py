"""Ledgers filled as the driver fills them, from ``kernelpro optimize --json``'s objects."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kernelpro.config import Settings
from kernelpro.suite.budget import Limits
from kernelpro.suite.layout import SuiteConfig, SuitePaths, create_suite
from kernelpro.suite.ledger import Ledger
from kernelpro.suite.sources import ProblemRef, resolve_sources
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]

# Timing short enough for tests, inherited by the child processes of the suite tests that start real runs.
SHORT_TIMING = {"KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
                "KERNELPRO_HARNESS__REFEREE": "false", "KERNELPRO_HARNESS__TIMING_TRIALS": "5",
                "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5", "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "1e9",
                "KERNELPRO_HARNESS__CORRECTNESS_TRIALS": "2", "KERNELPRO_SEARCH__FINALISTS": "0"}


def run_summary(improved: bool, speedup: float | None, correct: int = 2, degenerate: str | None = None,
                gpu_s: float = 60.0, usd: float = 0.5, report: str | None = None) -> dict[str, Any]:
    """The fields of an optimize summary a suite reads (``speedup``: the best's, or the fastest correct one's)."""
    return {"status": "completed", "improved": improved, "best_speedup": speedup if improved else 1.0,
            "best_speedup_ci95": [speedup * 0.95, speedup * 1.05] if improved and speedup else None,
            "fastest_correct_speedup": speedup, "correct_candidates": correct, "degenerate": degenerate,
            "reference_ms": 1.0, "gpu_seconds": gpu_s, "llm_cost_usd": usd, "report": report,
            "stop_reason": "iteration budget reached"}


def ledger_with(tmp_path: Path, problems: dict[str, dict[str, Any]], objective: str | None = None
                ) -> tuple[SuitePaths, Ledger]:
    """``problems``: key -> {"state", "result", "baselines", "failure", "failure_kind", "level"}."""
    refs = [ProblemRef(key=key, path=f"/p/{key}.py", level=spec.get("level"),
                       task=int(key.split("/")[-1].split("_")[0]) if spec.get("level") else None)
            for key, spec in problems.items()]
    config = SuiteConfig(sources=["/p"], device="cuda", baselines=["eager", "compile_default"], objective=objective)
    paths, ledger = create_suite(tmp_path, config, refs, suite_id="suite-test")
    for key, spec in problems.items():
        result = spec.get("result")
        ledger.update(key, state=spec.get("state", "done"), result=result, baselines=spec.get("baselines"),
                      failure=spec.get("failure"), failure_kind=spec.get("failure_kind"),
                      gpu_s=(result or {}).get("gpu_seconds", 0.0), usd=(result or {}).get("llm_cost_usd", 0.0))
    return paths, ledger


def two_problem_cpu_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, SuitePaths, Ledger]:
    """A suite of two problems (scale_relu, repeated_relu) for two CPU lanes, in an environment of its own whose
    runs are each a whole `kernelpro optimize` that ends at its first step (no money to spend): a test pays for
    runs side by side, not for searches (tests/cli/test_suite.py judges)."""
    for name in [n for n in os.environ if n.startswith("KERNELPRO_")]:
        monkeypatch.delenv(name)
    for name, value in {**SHORT_TIMING, "KERNELPRO_MEMORY__PATH": str(tmp_path / "memory"),
                        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
                        }.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    settings.suite.cpu_lanes = 2
    refs = resolve_sources([DATA / "problems" / "scale_relu.py", DATA / "problems" / "repeated_relu.py"])
    config = SuiteConfig(sources=["x"], device="cpu", max_iters=1, no_memory=True, per_problem=Limits())
    paths, ledger = create_suite(tmp_path, config, refs)
    return settings, paths, ledger
