"""A run directory held by this process: made for a new run, or opened again for a resumed one, with its driver
lock (``run_lock``) taken, so no other process drives the same run while this one does."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from kernelpro.run_lock import RunLock
from kernelpro.runs.files import RunFiles, new_run_id
from kernelpro.runs.spec import RunSpec


@dataclass
class RunClaim:
    """The run's files and its held lock; ``release`` (or leaving a ``with`` block) lets the next driver in."""

    files: RunFiles
    lock: RunLock | None
    resumed: bool

    @property
    def run_id(self) -> str:
        return self.files.root.name

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def __enter__(self) -> RunClaim:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.release()


def reopen_run(runs_dir: Path, run_id: str) -> RunClaim:
    """An existing run, held. Raises ``RunNotFound`` (with the recent runs there) or ``RunBusy`` (naming the
    process that drives it)."""
    files = RunFiles.open(runs_dir, run_id)
    return RunClaim(files, RunLock.acquire(files.root, f"run {run_id}"), resumed=True)


def create_run(spec: RunSpec, problem_name: str) -> RunClaim:
    """A new run directory with its ``run.json`` (the spec's ``run_meta``), held, with the verdicts it was given
    (``judged_before``) adopted. A write the storage refuses raises its ``OSError`` and leaves no half-made run
    directory behind: nothing was judged yet, so there is nothing to resume."""
    from kernelpro.runs.judged_before import JudgedBefore

    run_id = spec.run_id or new_run_id(problem_name)
    root = Path(spec.runs_dir) / run_id
    made = not root.exists()
    lock = None
    try:
        files = RunFiles.create(spec.runs_dir, run_id, spec.run_meta(problem_name))
        lock = RunLock.acquire(files.root, f"run {run_id}")
        if spec.judged_before is not None:
            JudgedBefore.adopt(spec.judged_before, files.root)
    except OSError:
        if lock is not None:
            lock.release()
        if made:
            shutil.rmtree(root, ignore_errors=True)
        raise
    return RunClaim(files, lock, resumed=False)
