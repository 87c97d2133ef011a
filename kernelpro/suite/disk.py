"""The suite's disk budget (``suite.disk_budget_mb``): past it, finished problems' bulky files are compressed,
then dropped, and the ledger records each so the report can say what is gone.

What the reports need is never touched: reports, candidates and their verdicts, ``results.jsonl``, ``run.json``,
metrics CSVs, the best candidate's files. In order, until the suite fits: Nsight Compute reports (``.ncu-rep``)
compressed, then those dropped; then the LangGraph checkpoints of finished runs compressed (a finished run is
not resumed; ``gunzip`` brings one back).
"""

from __future__ import annotations

import gzip
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from kernelpro.suite.layout import SuitePaths
from kernelpro.suite.ledger import Ledger


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def _gzip(path: Path) -> Path:
    target = path.with_name(path.name + ".gz")
    tmp = target.with_name(f".{target.name}.tmp")
    with path.open("rb") as source, gzip.open(tmp, "wb", compresslevel=6) as sink:
        shutil.copyfileobj(source, sink)
    os.replace(tmp, target)
    path.unlink()
    return target


def _steps(paths: SuitePaths, finished: dict[str, str]) -> Iterator[tuple[str, Path, str]]:
    """(problem, file, action) in the order the budget takes them."""
    runs = {run_id: key for key, run_id in finished.items()}
    dirs = [(runs[d.name], d) for d in sorted(paths.runs.iterdir()) if d.name in runs] if paths.runs.is_dir() else []
    for key, run in dirs:
        for report in sorted(run.rglob("*.ncu-rep")):
            yield key, report, "compressed"
    for key, run in dirs:
        for report in sorted(run.rglob("*.ncu-rep.gz")):
            yield key, report, "dropped"
    for key, run in dirs:
        checkpoint = run / "checkpoint.sqlite"
        if checkpoint.exists():
            yield key, checkpoint, "compressed"


def enforce_disk_budget(paths: SuitePaths, ledger: Ledger, budget_mb: float | None) -> int:
    """Bring the suite directory under ``budget_mb`` as far as the rules allow; returns the bytes freed."""
    if budget_mb is None:
        return 0
    limit = budget_mb * 1e6
    size = tree_bytes(paths.root)
    if size <= limit:
        return 0
    finished = {row.key: row.run_id for row in ledger.problems() if row.finished and row.run_id}
    start = size
    for key, path, action in _steps(paths, finished):
        if size <= limit:
            break
        if not path.exists():
            continue
        before = path.stat().st_size
        if action == "compressed":
            after = _gzip(path).stat().st_size
        else:
            path.unlink()
            after = 0
        size -= before - after
        ledger.record_pruned(str(path.relative_to(paths.root)), key, action, before)
    return start - size
