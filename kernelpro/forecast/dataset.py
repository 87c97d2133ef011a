"""The judged-candidate dataset: one JSON line per judged candidate, appended by every run that judges.

A row holds what a forecaster may see (the problem's source and hash, the candidate's source, the hardware) and
what the judge found (verdict, reason, speedup with its interval, class, the times and the problem's compulsory
bytes). Appends take an exclusive lock, so runs side by side do not interleave their lines.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from kernelpro.forecast.classes import speedup_class
from kernelpro.harness.result import EvalResult
from kernelpro.problem import Problem


class DatasetError(ValueError):
    pass


class JudgedRow(BaseModel):
    problem_name: str
    problem_hash: str
    problem_source: str
    candidate_source: str
    hardware: str
    """The GPU's name (``NVIDIA H200``), or ``cpu``."""
    verdict: str
    """The judge's status: ok, incorrect, rejected, compile_error, runtime_error, timeout."""
    reason: str | None = None
    speedup: float | None = None
    speedup_ci95: tuple[float, float] | None = None
    speed_verdict: str | None = None
    speed_class: int
    """0 for a failure (anything but a correct candidate with a speedup), else 1..8."""
    reference_ms: float | None = None
    candidate_ms: float | None = None
    traffic_bytes: int | None = None
    """The problem's compulsory bytes (inputs read once, outputs written once), where the judge measured them."""
    warnings: list[str] = Field(default_factory=list)
    """The judge's warnings on a passing candidate (``precision_downgrade``, ``output_reused``...)."""
    problem_findings: list[str] = Field(default_factory=list)
    """What is wrong with the problem itself (``constant_output``...): its candidates' speedups are hollow."""
    origin: str = ""
    """What judged it: optimize, eval, a benchmark."""
    run_id: str = ""
    recorded_at: str = ""
    tags: dict[str, Any] = Field(default_factory=dict)
    """Where the candidate came from, for datasets built from released kernels (file, level, task, claim)."""


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", errors="replace")).hexdigest()[:16]


def row_for(problem: Problem, candidate_source: str, result: EvalResult, hardware: str, origin: str,
            run_id: str = "", tags: dict[str, Any] | None = None) -> JudgedRow:
    good = result.status == "ok" and result.correct and result.speedup is not None
    ci = tuple(result.speedup_ci95) if result.speedup_ci95 else None
    return JudgedRow(problem_name=problem.name, problem_hash=source_hash(problem.source),
                     problem_source=problem.source, candidate_source=candidate_source, hardware=hardware,
                     verdict=result.status, reason=result.reason, speedup=result.speedup, speedup_ci95=ci,
                     speed_verdict=result.speed_verdict, speed_class=speedup_class(result.speedup) if good else 0,
                     reference_ms=result.reference_ms, candidate_ms=result.candidate_ms,
                     traffic_bytes=result.details.get("traffic_bytes"),
                     warnings=sorted({g.reason for g in result.guards if g.severity == "warn"}),
                     problem_findings=[f.reason for f in result.problem_findings], origin=origin, run_id=run_id,
                     recorded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), tags=tags or {})


def append_rows(path: Path, rows: Iterable[JudgedRow]) -> int:
    """Append rows under an exclusive lock; returns how many were written."""
    lines = [row.model_dump_json() + "\n" for row in rows]
    if not lines:
        return 0
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        fcntl.flock(out, fcntl.LOCK_EX)
        try:
            out.write("".join(lines))
            out.flush()
            os.fsync(out.fileno())
        finally:
            fcntl.flock(out, fcntl.LOCK_UN)
    return len(lines)


def read_rows(path: Path) -> list[JudgedRow]:
    """Every row of a dataset file; a line cut short by a kill at the end is skipped, a bad line elsewhere is an
    error naming it."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DatasetError(f"{path}: no such dataset file")
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(JudgedRow.model_validate(json.loads(line)))
        except (ValueError, ValidationError) as exc:
            if number == len(lines):
                break  # the last line, torn by a kill mid-append
            raise DatasetError(f"{path}:{number}: not a judged-candidate row ({str(exc).splitlines()[0]})") from exc
    return rows


def iter_problems(rows: Iterable[JudgedRow]) -> Iterator[str]:
    seen: set[str] = set()
    for row in rows:
        if row.problem_hash not in seen:
            seen.add(row.problem_hash)
            yield row.problem_hash


def split_by_problem(rows: list[JudgedRow], test_fraction: float = 0.3, seed: int = 0
                     ) -> tuple[list[JudgedRow], list[JudgedRow]]:
    """Train and test rows with no problem in both: problems are shuffled by a seeded hash and cut."""
    problems = sorted(iter_problems(rows), key=lambda h: hashlib.sha256(f"{seed}:{h}".encode()).hexdigest())
    test = set(problems[: max(1, round(test_fraction * len(problems)))]) if len(problems) > 1 else set()
    return [r for r in rows if r.problem_hash not in test], [r for r in rows if r.problem_hash in test]


def hardware_name(device: str) -> str:
    """The GPU's name for a cuda device (through NVML, which does not start a CUDA context), else ``cpu``."""
    if not device.startswith("cuda"):
        return "cpu"
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            index = int(device.partition(":")[2] or 0)
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(index))
            return name.decode() if isinstance(name, bytes) else str(name)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML is optional
        return "cuda"
