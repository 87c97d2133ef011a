"""A run directory on disk: the checkpoint, every judged candidate with its result, the results log, the report.

    <runs_dir>/<run_id>/
        run.json                  what was asked: problem path, device, policy, budgets, created
        checkpoint.sqlite         the LangGraph checkpoint (the run resumes from it)
        candidates/<id>.py        each candidate's source, written before it is judged
        candidates/<id>.json      its EvalResult, written once judged: a resumed run reuses it, never re-judges
        results.jsonl             one line per judged candidate, in judging order
        report.md, report.html, speedup.png, best_candidate.py, best_candidate_load_inline.py
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

from kernelpro.atomic_write import write_atomic
from kernelpro.harness.result import EvalResult

__all__ = ["RunFiles", "RunNotFound", "new_run_id", "write_atomic"]


class RunNotFound(FileNotFoundError):
    pass


RUN_ID_MAX = 60  # a chat thread's id is a run id too, and thread ids are at most 60 characters


def new_run_id(problem_name: str) -> str:
    """``YYYYmmdd-HHMMSS-<problem>-<4 hex>``, at most ``RUN_ID_MAX`` characters whatever the problem's name."""
    room = RUN_ID_MAX - len("20260101-000000--0000")
    stem = "".join(c if c.isalnum() or c in "-_" else "-" for c in problem_name)[:room].strip("-") or "run"
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{stem}-{secrets.token_hex(2)}"


class RunFiles:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.candidates = self.root / "candidates"

    @classmethod
    def create(cls, runs_dir: Path, run_id: str, meta: dict[str, Any]) -> RunFiles:
        files = cls(Path(runs_dir) / run_id)
        files.candidates.mkdir(parents=True, exist_ok=True)
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_atomic(files.meta_path, json.dumps({"run_id": run_id, "created": created, **meta}, indent=1,
                                                  default=str))
        return files

    @classmethod
    def open(cls, runs_dir: Path, run_id: str) -> RunFiles:
        files = cls(Path(runs_dir) / run_id)
        if not files.meta_path.exists():
            known = sorted(p.parent.name for p in Path(runs_dir).glob("*/run.json"))[-5:]
            raise RunNotFound(f"no run {run_id!r} in {runs_dir}; recent runs there: {', '.join(known) or 'none'}")
        return files

    @property
    def meta_path(self) -> Path:
        return self.root / "run.json"

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint.sqlite"

    @property
    def results(self) -> Path:
        return self.root / "results.jsonl"

    @property
    def baselines_path(self) -> Path:
        """The compile baselines the run judged before its search (``optimize --baselines``), summarised."""
        return self.root / "baselines.json"

    def baselines(self) -> dict[str, dict[str, Any]] | None:
        """Those baselines (name -> status, speedup over eager, interval), None when it judged none."""
        try:
            found = json.loads(self.baselines_path.read_text())
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    def meta(self) -> dict[str, Any]:
        return json.loads(self.meta_path.read_text())

    def update_meta(self, **fields: Any) -> None:
        write_atomic(self.meta_path, json.dumps(self.meta() | fields, indent=1, default=str))

    def write_source(self, variant_id: str, source: str) -> Path:
        path = self.candidates / f"{variant_id}.py"
        write_atomic(path, source)
        return path

    def stored_result(self, variant_id: str, source: str) -> EvalResult | None:
        """The result of this very candidate judged before a crash or kill, so it is never judged twice."""
        path = self.candidates / f"{variant_id}.json"
        code = self.candidates / f"{variant_id}.py"
        if not path.exists() or not code.exists() or code.read_text() != source:
            return None
        try:
            return EvalResult.model_validate_json(path.read_text())
        except ValueError:
            return None  # torn by a kill between write and rename cannot happen; a hand-edited file can

    def store_result(self, variant_id: str, result: EvalResult) -> None:
        """Keep the verdict of this variant (with its source, ``write_source``) for ``stored_result``."""
        write_atomic(self.candidates / f"{variant_id}.json", result.model_dump_json(indent=1))

    def record_result(self, variant_id: str, result: EvalResult, entry: dict[str, Any]) -> None:
        """Store the result, then log it once in results.jsonl (a resumed run does not log it again). The log is
        written whole each time (``write_atomic``): a full disk or a kill leaves it as it was, never a torn line."""
        self.store_result(variant_id, result)
        if variant_id in self.logged_ids():
            return
        logged = self.results.read_text() if self.results.exists() else ""
        if logged and not logged.endswith("\n"):
            logged += "\n"  # a line cut short by a kill under an earlier version that appended
        write_atomic(self.results, logged + json.dumps({"variant": variant_id, **entry}, default=str) + "\n")

    def logged_ids(self) -> set[str]:
        if not self.results.exists():
            return set()
        ids = set()
        for line in self.results.read_text().splitlines():
            try:
                ids.add(json.loads(line)["variant"])
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by a kill
        return ids
