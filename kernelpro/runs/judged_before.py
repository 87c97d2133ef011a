"""Verdicts taken before a run by the same judge on the same problem, such as a suite's compile baselines.

A candidate of the run with the same code (``normalised_source``: comments, docstrings and layout set aside) is
answered from such a verdict and costs no GPU time: a suite judges ``torch.compile`` of the reference as its
baseline, and the recipe policy's first candidates are that very code. The file is JSON lines, each
``{"label": ..., "source": ..., "result": <EvalResult>}``; ``kernelpro optimize --judged-before FILE`` checks it
and copies it into the run directory, so a resumed run answers from it too.

Only verdicts about the code itself are reused (ok, incorrect, rejected, a compile error); a timeout or a
worker's failure may say more about that moment than about the code, and such a candidate is judged again.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from kernelpro.atomic_write import write_atomic
from kernelpro.harness.result import EvalResult
from kernelpro.search.tree import normalised_source

FILE_NAME = "judged_before.jsonl"
REUSED_STATUSES = ("ok", "incorrect", "rejected", "compile_error")


class JudgedBeforeError(ValueError):
    """A file of earlier verdicts that cannot be read, with the line at fault."""


def _text(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise JudgedBeforeError(f"{path}: cannot be read ({error.strerror or error})") from None


class JudgedBefore:
    """Earlier verdicts by normalised code: ``find(source)`` gives (verdict, label) or None."""

    def __init__(self, entries: dict[str, tuple[EvalResult, str]] | None = None) -> None:
        self.entries = entries or {}

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def read(cls, path: Path) -> JudgedBefore:
        return cls.parse(_text(path), path)

    @classmethod
    def parse(cls, text: str, path: Path) -> JudgedBefore:
        """The verdicts of a file's ``text``; ``path`` names it in the error about a line at fault."""
        entries: dict[str, tuple[EvalResult, str]] = {}
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                source, label = entry["source"], str(entry.get("label") or "an earlier judgment")
                result = EvalResult.model_validate(entry["result"])
            except (ValueError, KeyError, TypeError, ValidationError) as error:
                reason = f"{type(error).__name__}: {error}".splitlines()[0][:200]
                raise JudgedBeforeError(f"{path}, line {number}: not a verdict with its source ({reason})") from None
            if result.status in REUSED_STATUSES:
                entries[normalised_source(source)] = (result, label)
        return cls(entries)

    @classmethod
    def of_run(cls, run_root: Path) -> JudgedBefore:
        """The verdicts a run adopted (none when it adopted none)."""
        path = Path(run_root) / FILE_NAME
        return cls.read(path) if path.exists() else cls()

    @classmethod
    def adopt(cls, path: Path, run_root: Path) -> JudgedBefore:
        """Check ``path`` and keep a copy in the run directory; raises ``JudgedBeforeError`` on a bad file."""
        text = _text(path)
        found = cls.parse(text, path)
        write_atomic(Path(run_root) / FILE_NAME, text)
        return found

    def find(self, source: str) -> tuple[EvalResult, str] | None:
        return self.entries.get(normalised_source(source))


def _lines(judged: list[tuple[str, str, EvalResult]]) -> str:
    return "".join(json.dumps({"label": label, "source": source, "result": result.model_dump(mode="json")}) + "\n"
                   for label, source, result in judged)


def write_verdicts(path: Path, judged: list[tuple[str, str, EvalResult]]) -> None:
    """Write (label, source, verdict) triples as a file ``JudgedBefore.read`` takes, in one atomic step."""
    write_atomic(Path(path), _lines(judged))


def add_to_run(run_root: Path, judged: list[tuple[str, str, EvalResult]]) -> None:
    """Add (label, source, verdict) triples to the verdicts a run answers from (a later one of the same code
    wins), in one atomic step: verdicts the run took itself before its search, such as its compile baselines."""
    path = Path(run_root) / FILE_NAME
    write_atomic(path, (_text(path) if path.exists() else "") + _lines(judged))
