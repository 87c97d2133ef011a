"""The suite's disk budget (``suite.disk_budget_mb``): past it, finished problems' bulky files are compressed,
then dropped, and the ledger records each so the report can say what is gone.

What the reports need is never touched: reports, candidates and their verdicts, ``results.jsonl``, ``run.json``,
metrics CSVs. Each profile directory (``profiles/pN/``) is matched to the variant it profiled (the candidate
source in its target job, against ``candidates/<id>.py``): the best variant's and the finalists' Nsight Compute
reports are kept whole as long as anything else can go. In order, until the suite fits: the other variants'
reports (``.ncu-rep``) compressed, then those dropped; then the LangGraph checkpoints of finished runs compressed
(a finished run is not resumed; ``gunzip`` brings one back); last the best's and the finalists' reports
compressed, never dropped.
"""

from __future__ import annotations

import gzip
import json
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


def _keepers(run: Path, best: str | None) -> dict[str, str]:
    """The variants whose profiles stay: variant id -> "best" or "finalist"."""
    keep: dict[str, str] = {}
    results = run / "results.jsonl"
    for line in results.read_text(errors="replace").splitlines() if results.is_file() else []:
        try:
            final_of = json.loads(line).get("final_of")
        except (ValueError, AttributeError):
            continue
        if isinstance(final_of, str):
            keep[final_of] = "finalist"
    if best and best != "reference":
        keep[best] = "best"
    return keep


def _profiled(run: Path) -> dict[Path, str]:
    """Each profile directory of the run -> the variant it profiled ("reference" for the reference alone), where
    its target job says (a directory without one is left unnamed)."""
    by_source = {}
    for source in sorted((run / "candidates").glob("*.py")):
        if "." not in source.stem:  # <id>.py, not the finalists' <id>.final.py
            by_source.setdefault(source.read_text(errors="replace"), source.stem)
    owners = {}
    for job in sorted(run.glob("profiles/*/job-*.json")):
        try:
            candidate = json.loads(job.read_text()).get("candidate_source")
        except (OSError, ValueError, AttributeError):
            continue
        owner = "reference" if candidate is None else by_source.get(candidate)
        if owner is not None:
            owners.setdefault(job.parent, owner)
    return owners


def _steps(paths: SuitePaths, finished: dict[str, tuple[str, str | None]]) -> Iterator[tuple[str, Path, str, str]]:
    """(problem, file, action, whose profile) in the order the budget takes them."""
    runs = {run_id: (key, best) for key, (run_id, best) in finished.items()}
    dirs = [(runs[d.name], d) for d in sorted(paths.runs.iterdir()) if d.name in runs] if paths.runs.is_dir() else []
    kept: list[tuple[str, Path, str]] = []
    others: list[tuple[str, Path, str]] = []
    for (key, best), run in dirs:
        keep, owners = _keepers(run, best), _profiled(run)
        # a report compressed by an earlier pass is still one: it may be dropped now
        reports = {p.with_name(p.name.removesuffix(".gz")) for p in run.rglob("*.ncu-rep*")
                   if p.name.endswith((".ncu-rep", ".ncu-rep.gz"))}
        for report in sorted(reports):
            owner = owners.get(report.parent, "")
            (kept if owner in keep else others).append(
                (key, report, f"{owner} ({keep[owner]})" if owner in keep else owner))
    for key, report, whose in others:
        yield key, report, "compressed", whose
    for key, report, whose in others:
        yield key, report.with_name(report.name + ".gz"), "dropped", whose
    for (key, _), run in dirs:
        checkpoint = run / "checkpoint.sqlite"
        if checkpoint.exists():
            yield key, checkpoint, "compressed", ""
    for key, report, whose in kept:
        yield key, report, "compressed", whose


def enforce_disk_budget(paths: SuitePaths, ledger: Ledger, budget_mb: float | None) -> int:
    """Bring the suite directory under ``budget_mb`` as far as the rules allow; returns the bytes freed."""
    if budget_mb is None:
        return 0
    limit = budget_mb * 1e6
    size = tree_bytes(paths.root)
    if size <= limit:
        return 0
    finished = {row.key: (row.run_id, row.run_outcome.best_variant) for row in ledger.problems()
                if row.finished and row.run_id}
    start = size
    for key, path, action, whose in _steps(paths, finished):
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
        ledger.record_pruned(str(path.relative_to(paths.root)), key, action, before, whose)
    return start - size
