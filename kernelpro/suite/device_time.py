"""Where a suite's judging time went: every verdict its runs took, each counted once, by the judge's phases and,
for jobs that shared the device until timing, by how they held it.

A slow suite says from this whether loading, the first call (a ``torch.compile`` candidate compiles there,
inside the ``correctness`` phase) or timing cost it, and, with lanes sharing a GPU, how long jobs held it alone,
shared it, let it go while compiling and waited for it: what ``suite.lanes_per_gpu`` is tuned by.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernelpro.runs.judged_before import FILE_NAME as JUDGED_BEFORE

# device_turn's parts, as the report names them
TURN_PARTS = {"alone_s": "held alone (timing)", "benchmarking_s": "held alone (autotuning's benchmarks)",
              "shared_s": "held shared (loading, checks)", "released_s": "let go while compiling",
              "waited_to_start_s": "waited to start", "waited_shared_s": "waited to take it back",
              "waited_benchmark_s": "waited to benchmark alone", "waited_alone_s": "waited to hold it alone"}


def baseline_files(root: Path, runs: Iterable[tuple[str, str]]) -> list[tuple[str, Path]]:
    """(problem, file) for each problem's compile baselines' verdicts, given its (key, run id) pairs: its run's
    ``judged_before.jsonl`` (the run judges them before its search), or, in suites from before that, the
    baselines' own file in the suite's logs."""
    found = {p.name.removesuffix(".baseline-verdicts.jsonl"): p for p in root.glob("logs/*.baseline-verdicts.jsonl")}
    for key, run_id in runs:
        path = root / "runs" / run_id / JUDGED_BEFORE
        if run_id and path.is_file():
            found.setdefault(re.sub(r"[^A-Za-z0-9._-]", "_", key), path)
    return sorted(found.items())


def baseline_entries(path: Path) -> list[dict[str, Any]]:
    """The compile baselines among a file's verdicts (``{"label", "source", "result"}`` lines), each with its
    ``mode``: labelled ``the NAME baseline`` (``the suite's NAME baseline`` in suites before runs judged them)."""
    found = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        label = str(entry.get("label", ""))
        mode = label.removeprefix("the suite's ").removeprefix("the ").removesuffix(" baseline")
        if label.startswith("the ") and label.endswith(" baseline") and mode.startswith("compile_"):
            found.append({**entry, "mode": mode})
    return found


def _copy_key(verdict: dict[str, Any]) -> str:
    details = verdict.get("details") or {}
    return json.dumps([verdict.get("elapsed_s"), details.get("phase_s"), verdict.get("speedup")])


def judged_verdicts(root: Path, runs: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """Every verdict the suite's runs took (baselines, candidates, finalists' re-judgments), each once: a
    candidate answered by another's verdict (a baseline's, a twin's) holds a copy of it, marked
    ``details.answered_by``; runs from before that mark are told by the copy's seconds, phase for phase."""
    verdicts = [entry["result"] for _, path in baseline_files(root, runs) for entry in baseline_entries(path)]
    seen = {_copy_key(v) for v in verdicts}
    for path in sorted(root.glob("runs/*/candidates/*.json")):
        try:
            verdict = json.loads(path.read_text())
        except (OSError, ValueError):  # being written by a run
            continue
        if "status" not in verdict or (verdict.get("details") or {}).get("answered_by") \
                or _copy_key(verdict) in seen:
            continue
        seen.add(_copy_key(verdict))
        verdicts.append(verdict)
    return verdicts


def device_time(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """How many verdicts, their seconds in the worker, those seconds by phase (largest first), where jobs
    shared the device until timing, by how they held it (``device_turn_s``), and on CUDA the most GPU memory one
    job held while it timed (``timing_gpu_peak_mb``): what lanes sharing a GPU must fit beside."""
    phases: dict[str, float] = {}
    turns: dict[str, float] = {}
    peaks = []
    for verdict in verdicts:
        details = verdict.get("details") or {}
        if (peak := (details.get("timing") or {}).get("gpu_peak_mb")) is not None:
            peaks.append(peak)
        for phase, seconds in (details.get("phase_s") or {}).items():
            phases[phase] = phases.get(phase, 0.0) + seconds
        for part, seconds in (details.get("device_turn") or {}).items():
            if part.endswith("_s"):
                turns[part] = turns.get(part, 0.0) + seconds
    return {"verdicts": len(verdicts), "elapsed_s": round(sum(v.get("elapsed_s") or 0.0 for v in verdicts), 1),
            "phase_s": {k: round(v, 1) for k, v in sorted(phases.items(), key=lambda kv: -kv[1])},
            **({"device_turn_s": {k: round(v, 1) for k, v in turns.items()}} if turns else {}),
            **({"timing_gpu_peak_mb": max(peaks)} if peaks else {})}


def _span(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def device_time_rows(spent: dict[str, Any]) -> list[tuple[str, str]]:
    """The report's rows: the verdicts and their time, the phases that took it, and how the device was held."""
    if not spent["verdicts"]:
        return []
    rows = [("verdicts", f"{spent['verdicts']}, {_span(spent['elapsed_s'])} in the judge's workers")]
    rows += [(f"phase: {phase}", _span(seconds)) for phase, seconds in spent["phase_s"].items()
             if seconds >= 0.05 * max(spent["elapsed_s"], 1e-9)]
    turns = spent.get("device_turn_s") or {}
    rows += [(f"device {label}", _span(turns[part])) for part, label in TURN_PARTS.items() if turns.get(part)]
    if (peak := spent.get("timing_gpu_peak_mb")) is not None:
        rows.append(("most GPU memory one job held while timed", f"{peak / 1024:.1f} GiB"))
    return rows
