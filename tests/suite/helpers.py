"""Ledgers filled as the driver fills them, from ``kernelpro optimize --json``'s objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelpro.suite.layout import SuiteConfig, SuitePaths, create_suite
from kernelpro.suite.ledger import Ledger
from kernelpro.suite.sources import ProblemRef

# Timing short enough for tests, inherited by the child processes of the suite tests that start real runs.
SHORT_TIMING = {"KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3", "KERNELPRO_HARNESS__TIMING_TRIALS": "5",
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
