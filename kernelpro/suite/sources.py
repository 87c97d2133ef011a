"""Which problems a suite runs: directories of problems, KernelBench checkouts, or lists of paths.

A KernelBench checkout (or its ``KernelBench/`` folder, or one ``levelN`` folder of it) names its problems
``levelN/<task>_<Name>.py``; the level and task id are KernelBench's own, so ``--level 1 --tasks 19`` is
``level1/19_ReLU.py``. A text file lists problem paths, one a line (blank lines and ``#`` comments skipped,
relative paths from the file's folder); a KernelBench-style path in it keeps its level and task. A
robust-kbench checkout (``suite.robust_kbench``) gives the KernelBench tasks that pass its filters, under
KernelBench's levels, task ids and keys.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import asdict, dataclass
from pathlib import Path

from kernelpro.suite import robust_kbench

LEVEL_DIR = re.compile(r"^level(\d+)$")
TASK_FILE = re.compile(r"^(\d+)_.+\.py$")


class SourceError(ValueError):
    """A SOURCE that names no usable problems (the message says which and why)."""


@dataclass(frozen=True)
class ProblemRef:
    """One problem of a suite, before it is read: where it is and how KernelBench numbers it."""

    key: str
    """Unique within the suite: ``level1/19_ReLU`` for KernelBench problems, else the file's stem."""
    path: str
    level: int | None = None
    task: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def parse_tasks(text: str | None) -> set[int] | None:
    """``"1-20,40"`` -> {1, ..., 20, 40}; None for all."""
    if text is None or not text.strip():
        return None
    chosen: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not match:
            raise SourceError(f"--tasks {text!r}: {part!r} is neither a task id nor a range like 1-20")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if high < low:
            raise SourceError(f"--tasks {text!r}: the range {part!r} runs backwards")
        chosen.update(range(low, high + 1))
    return chosen


def _kernelbench_ref(path: Path) -> ProblemRef | None:
    level, task = LEVEL_DIR.match(path.parent.name), TASK_FILE.match(path.name)
    if level is None or task is None:
        return None
    return ProblemRef(key=f"{path.parent.name}/{path.stem}", path=str(path.resolve()), level=int(level.group(1)),
                      task=int(task.group(1)))


def _plain_ref(path: Path) -> ProblemRef:
    return _kernelbench_ref(path) or ProblemRef(key=path.stem, path=str(path.resolve()))


def _level_dirs(directory: Path) -> list[Path]:
    for root in (directory, directory / "KernelBench"):
        levels = sorted((d for d in root.iterdir() if d.is_dir() and LEVEL_DIR.match(d.name)),
                        key=lambda d: int(LEVEL_DIR.match(d.name).group(1))) if root.is_dir() else []
        if levels:
            return levels
    return []


def _by_task(folder: Path) -> list[Path]:
    """A level's problem files in KernelBench's task order (2 before 10)."""
    def order(path: Path) -> tuple[int, str]:
        match = TASK_FILE.match(path.name)
        return (int(match.group(1)) if match else 1 << 30, path.name)

    return sorted(folder.glob("*.py"), key=order)


def _from_robust_kbench(levels: list[Path], filters: Collection[str] | None) -> list[ProblemRef]:
    try:
        found = [problem for level in levels for problem in robust_kbench.passing_problems(level, filters)]
    except robust_kbench.RobustKbenchError as error:
        raise SourceError(str(error)) from error
    return [ProblemRef(key=f"level{level}/{path.stem}", path=str(path.resolve()), level=level, task=task)
            for level, task, path in found]


def _from_directory(directory: Path, filters: Collection[str] | None) -> list[ProblemRef]:
    robust_levels = robust_kbench.level_dirs(directory)
    if robust_levels:
        return _from_robust_kbench(robust_levels, filters)
    if LEVEL_DIR.match(directory.name):
        return [_plain_ref(p) for p in _by_task(directory)]
    levels = _level_dirs(directory)
    if levels:
        return [_plain_ref(p) for level in levels for p in _by_task(level)]
    return [_plain_ref(p) for p in sorted(directory.glob("*.py")) if not p.name.startswith("_")]


def _from_list(listing: Path) -> list[ProblemRef]:
    refs = []
    for number, line in enumerate(listing.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        path = Path(line) if Path(line).is_absolute() else listing.parent / line
        if not path.is_file():
            raise SourceError(f"{listing}:{number}: {line}: no such problem file")
        refs.append(_plain_ref(path))
    return refs


def _from_source(source: Path, filters: Collection[str] | None) -> list[ProblemRef]:
    if source.is_dir():
        return _from_directory(source, filters)
    if not source.is_file():
        raise SourceError(f"{source}: no such file or directory")
    if source.suffix == ".py":
        return [_plain_ref(source)]
    return _from_list(source)


def resolve_sources(sources: list[str | Path], levels: list[int] | None = None, tasks: str | None = None,
                    robust_filters: Collection[str] | None = None) -> list[ProblemRef]:
    """Every problem the sources name, in order, each once, filtered by KernelBench level and task id.

    A filter by level or task keeps only problems that have one (KernelBench-numbered problems).
    ``robust_filters``: the robust-kbench filters that exclude a task of a robust-kbench source (None: all)."""
    if not sources:
        raise SourceError("give at least one SOURCE: a problem directory, a KernelBench checkout or a list file")
    chosen_tasks = parse_tasks(tasks)
    found: dict[str, ProblemRef] = {}
    for source in sources:
        for ref in _from_source(Path(source), robust_filters):
            if levels and ref.level not in levels:
                continue
            if chosen_tasks is not None and ref.task not in chosen_tasks:
                continue
            if ref.key in found and found[ref.key].path != ref.path:
                ref = ProblemRef(key=f"{ref.key}~{len(found)}", path=ref.path, level=ref.level, task=ref.task)
            found.setdefault(ref.key, ref)
    if not found:
        filters = (f" at level {', '.join(map(str, levels))}" if levels else "") + (f", tasks {tasks}" if tasks else "")
        raise SourceError(f"no problems found in {', '.join(map(str, sources))}{filters}")
    return list(found.values())
