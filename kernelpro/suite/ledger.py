"""The suite ledger: one SQLite file in the suite directory, written by the driver alone.

It holds the suite's configuration and status and, per problem, its state (``pending`` -> ``running`` (its
baselines, then its optimisation) -> ``done``, ``failed`` or ``budget``: cut by the suite's time budget before it
found an improvement, so it keeps the reference), the run id its optimisation runs under (chosen
before the run starts, so a killed suite resumes that very run), its baselines, its result and its spend. Every
change is one short transaction in WAL mode, so ``suite status`` and ``suite report`` read it while the suite
runs. Whether the suite still runs is not the ledger's word alone: a driver killed outright leaves ``running``
behind, so readers ask ``driven`` (is the driver's lock held?) and show such rows as ``interrupted``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelpro import run_lock
from kernelpro.runs.outcome import RunOutcome
from kernelpro.suite.sources import ProblemRef

SCHEMA = """
CREATE TABLE IF NOT EXISTS suite (id TEXT PRIMARY KEY, created TEXT, config TEXT, status TEXT, stop_reason TEXT,
                                  active_s REAL DEFAULT 0, updated TEXT);
CREATE TABLE IF NOT EXISTS problems (idx INTEGER PRIMARY KEY, key TEXT UNIQUE, path TEXT, level INTEGER,
    task INTEGER, state TEXT, run_id TEXT, lane TEXT, attempts INTEGER DEFAULT 0, baselines TEXT, result TEXT,
    failure TEXT, failure_kind TEXT, gpu_s REAL DEFAULT 0, usd REAL DEFAULT 0, wall_s REAL DEFAULT 0,
    started TEXT, ended TEXT);
CREATE TABLE IF NOT EXISTS pruned (path TEXT PRIMARY KEY, problem TEXT, action TEXT, bytes INTEGER, at TEXT,
    variant TEXT);
"""
STATES = ("pending", "running", "done", "failed", "budget")
UNFINISHED = ("pending", "running")
FINISHED = ("done", "failed", "budget")
INTERRUPTED = "interrupted"
"""Shown, never stored: what the ledger calls ``running`` (a problem, or the suite) once no live process drives
the suite (its driver was killed, or its machine went down), so nothing is running it any more."""


class LedgerError(ValueError):
    """No such suite, or a ledger that cannot be read."""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class ProblemRow:
    """One problem as the ledger holds it."""

    idx: int
    key: str
    path: str
    level: int | None
    task: int | None
    state: str
    run_id: str | None = None
    lane: str | None = None
    attempts: int = 0
    baselines: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    failure: str | None = None
    failure_kind: str | None = None
    gpu_s: float = 0.0
    usd: float = 0.0
    wall_s: float = 0.0
    started: str | None = None
    ended: str | None = None

    @property
    def ref(self) -> ProblemRef:
        return ProblemRef(key=self.key, path=self.path, level=self.level, task=self.task)

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    @property
    def run_outcome(self) -> RunOutcome:
        """``result`` read as the run's outcome (every field at its default where the ledger holds none)."""
        return RunOutcome.of(self.result) or RunOutcome()


def seen_state(state: str, driven: bool) -> str:
    """A stored state as it is shown: ``running`` without a live driver is ``interrupted``."""
    return INTERRUPTED if state == "running" and not driven else state


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()  # lanes are threads of one driver: one writer at a time

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            conn.row_factory = sqlite3.Row
            with conn:
                yield conn
        finally:
            conn.close()

    @classmethod
    def create(cls, path: Path, suite_id: str, config: dict[str, Any], problems: list[ProblemRef]) -> Ledger:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        building = cls(path.with_name(f".{path.name}.new"))  # whole or absent: readers never see it half made
        building.path.unlink(missing_ok=True)
        with building._connect() as conn:
            conn.executescript(SCHEMA)
            conn.execute("INSERT INTO suite (id, created, config, status, updated) VALUES (?, ?, ?, 'running', ?)",
                         (suite_id, _now(), json.dumps(config, default=str), _now()))
            conn.executemany("INSERT INTO problems (idx, key, path, level, task, state) VALUES (?, ?, ?, ?, ?, "
                             "'pending')", [(i, p.key, p.path, p.level, p.task) for i, p in enumerate(problems)])
        os.replace(building.path, path)
        ledger = cls(path)
        with ledger._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
        return ledger

    @classmethod
    def open(cls, path: Path) -> Ledger:
        if not Path(path).is_file():
            raise LedgerError(f"no suite ledger at {path}")
        ledger = cls(path)
        try:
            ledger.suite()
        except sqlite3.DatabaseError as error:
            raise LedgerError(f"{path}: not a suite ledger ({error})") from error
        return ledger

    # -- the suite --------------------------------------------------------------------------------------------
    def driven(self) -> bool:
        """Whether a live process drives this suite now: the driver's lock on its directory is held
        (``run_lock``), which the kernel lets go however the driver dies, a ``kill -9`` included."""
        return run_lock.is_held(self.path.parent)

    def suite(self) -> dict[str, Any]:
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM suite").fetchone()
        if row is None:
            raise LedgerError(f"{self.path}: the ledger holds no suite")
        return {**dict(row), "config": json.loads(row["config"])}

    def set_suite(self, **fields: Any) -> None:
        if "config" in fields:
            fields["config"] = json.dumps(fields["config"], default=str)
        assignments = ", ".join(f"{name} = ?" for name in fields)
        with self._lock, self._connect() as conn:
            conn.execute(f"UPDATE suite SET {assignments}, updated = ?", (*fields.values(), _now()))

    def add_active(self, seconds: float) -> None:
        with self._lock, self._connect() as conn:
            conn.execute("UPDATE suite SET active_s = active_s + ?, updated = ?", (seconds, _now()))

    # -- problems ---------------------------------------------------------------------------------------------
    def problems(self) -> list[ProblemRow]:
        with self._connect() as conn:
            rows = conn.execute("SELECT * FROM problems ORDER BY idx").fetchall()
        return [self._row(r) for r in rows]

    def problem(self, key: str) -> ProblemRow:
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM problems WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise LedgerError(f"no problem {key!r} in this suite")
        return self._row(row)

    def update(self, key: str, **fields: Any) -> None:
        for name in ("baselines", "result"):
            if name in fields and fields[name] is not None:
                fields[name] = json.dumps(fields[name], default=str)
        if fields.get("state") is not None and fields["state"] not in STATES:
            raise ValueError(f"unknown problem state {fields['state']!r}")
        assignments = ", ".join(f"{name} = ?" for name in fields)
        with self._lock, self._connect() as conn:
            conn.execute(f"UPDATE problems SET {assignments} WHERE key = ?", (*fields.values(), key))

    def start_attempt(self, key: str, lane: str) -> int:
        """Count one more start of the problem on ``lane``; returns the attempt's number (1 for the first)."""
        with self._lock, self._connect() as conn:
            conn.execute("UPDATE problems SET attempts = attempts + 1, lane = ?, started = COALESCE(started, ?) "
                         "WHERE key = ?", (lane, _now(), key))
            return conn.execute("SELECT attempts FROM problems WHERE key = ?", (key,)).fetchone()[0]

    def finish(self, key: str, state: str, **fields: Any) -> None:
        self.update(key, state=state, ended=_now(), **fields)

    def retry_failed(self, kinds: set[str] | None = None) -> list[str]:
        """Every failed problem (of ``kinds`` only, when given) pending again, its attempts back to 0; its run id,
        baselines and spend so far stay, so the run resumes from its checkpoint and no baseline is measured
        twice. With ``budget`` among ``kinds``, the problems a budget cut too, marked (failure kind ``budget``) so
        that their runs go on with a new share added to their budgets. Returns the problems' keys."""
        with self._lock, self._connect() as conn:
            rows = conn.execute("SELECT key, state, failure_kind FROM problems WHERE state IN ('failed', 'budget') "
                                "ORDER BY idx")
            picked = [(key, state) for key, state, kind in rows.fetchall()
                      if (state == "failed" and (kinds is None or (kind or "crash") in kinds))
                      or (state == "budget" and kinds is not None and "budget" in kinds)]
            conn.executemany("UPDATE problems SET state = 'pending', attempts = 0, failure = NULL, "
                             "failure_kind = ?, result = NULL, ended = NULL WHERE key = ?",
                             [("budget" if state == "budget" else None, key) for key, state in picked])
        return [key for key, _ in picked]

    # -- what the disk budget dropped -------------------------------------------------------------------------
    def record_pruned(self, path: str, problem: str, action: str, size: int, variant: str = "") -> None:
        """``variant``: whose profile the file is ("864abf46 (best)", "reference"), or "" for other files."""
        with self._lock, self._connect() as conn:
            columns = {r["name"] for r in conn.execute("PRAGMA table_info(pruned)")}
            if "variant" not in columns:  # a ledger written before the column
                conn.execute("ALTER TABLE pruned ADD COLUMN variant TEXT")
            conn.execute("INSERT OR REPLACE INTO pruned (path, problem, action, bytes, at, variant) "
                         "VALUES (?, ?, ?, ?, ?, ?)", (path, problem, action, size, _now(), variant))

    def pruned(self) -> list[dict[str, Any]]:
        with self._connect() as conn:
            return [dict(r) for r in conn.execute("SELECT * FROM pruned ORDER BY at, path").fetchall()]

    @staticmethod
    def _row(row: sqlite3.Row) -> ProblemRow:
        data = dict(row)
        for name in ("baselines", "result"):
            data[name] = json.loads(data[name]) if data[name] else None
        return ProblemRow(**data)
