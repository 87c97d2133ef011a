"""robust-kbench's task lists (SakanaAI/robust-kbench) as a suite SOURCE: the KernelBench tasks that pass its filters.

A robust-kbench checkout keeps each KernelBench task in ``tasks/kernelbench/level_<N>/task_<K>/``: the problem
file under KernelBench's own name (``<K>_<Name>.py``) beside ``filter_results.json``, whose ``filter_*``
booleans say which of its checks flagged the task (outputs confined to a tiny range, near-constant outputs or
axes, outputs that barely depend on the inputs, and a language model's judgement of redundant or inefficient
code). A task is read when none of the chosen filters flagged it (``suite.robust_kbench_filters``: all of them
by default); a task without filter results has not been judged and is not read. Problems keep KernelBench's
levels, task ids and keys (``level1/19_ReLU``), so ``--level``/``--tasks`` and scores compare with a KernelBench
run. Only the problem files are read; robust-kbench's own tasks in other formats are not KernelBench problems.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from pathlib import Path

LEVEL_DIR = re.compile(r"^level_(\d+)$")
TASK_DIR = re.compile(r"^task_(\d+)$")
PROBLEM_FILE = re.compile(r"^(\d+)_.+\.py$")
FILTERS_FILE = "filter_results.json"


class RobustKbenchError(ValueError):
    """A robust-kbench task whose filter results cannot be read."""


def level_dirs(directory: Path) -> list[Path]:
    """The ``level_<N>`` folders of a robust-kbench checkout, its ``tasks/`` or ``tasks/kernelbench/`` folder,
    or of one level folder itself; [] when ``directory`` is none of these."""
    if LEVEL_DIR.match(directory.name):
        candidates = [directory]
    else:
        root = next((r for r in (directory, directory / "kernelbench", directory / "tasks" / "kernelbench")
                     if r.is_dir() and any(LEVEL_DIR.match(d.name) for d in r.iterdir() if d.is_dir())), None)
        candidates = sorted((d for d in root.iterdir() if d.is_dir() and LEVEL_DIR.match(d.name)),
                            key=lambda d: int(LEVEL_DIR.match(d.name).group(1))) if root else []
    return [d for d in candidates if any(TASK_DIR.match(t.name) for t in d.iterdir() if t.is_dir())]


def flagged_by(task_dir: Path, filters: Collection[str] | None) -> list[str] | None:
    """The chosen filters that flagged the task (None: all ``filter_*`` booleans); None when it was not
    judged."""
    path = task_dir / FILTERS_FILE
    if not path.is_file():
        return None
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RobustKbenchError(f"{path}: not readable filter results ({error})") from error
    if not isinstance(results, dict):
        raise RobustKbenchError(f"{path}: filter results must be a JSON object of filter_* booleans")
    checks = {name: value for name, value in results.items() if name.startswith("filter_") and isinstance(value, bool)}
    if filters is not None:
        unknown = sorted(set(filters) - set(checks))
        if unknown:
            raise RobustKbenchError(f"{path}: no filter {', '.join(unknown)} (it has {', '.join(sorted(checks))})")
        checks = {name: checks[name] for name in filters}
    return sorted(name for name, flagged in checks.items() if flagged)


def passing_problems(level_dir: Path, filters: Collection[str] | None = None) -> list[tuple[int, int, Path]]:
    """(level, task, problem file) of each task of the level that no chosen filter flagged, in task order."""
    level = int(LEVEL_DIR.match(level_dir.name).group(1))
    tasks = sorted(((int(m.group(1)), d) for d in level_dir.iterdir()
                    if d.is_dir() and (m := TASK_DIR.match(d.name))), key=lambda t: t[0])
    found = []
    for task, task_dir in tasks:
        if flagged_by(task_dir, filters) != []:
            continue  # flagged, or never judged
        problems = sorted(p for p in task_dir.glob("*.py") if PROBLEM_FILE.match(p.name))
        if len(problems) != 1:
            raise RobustKbenchError(f"{task_dir}: expected one KernelBench problem file <task>_<Name>.py, found "
                                    f"{len(problems)}")
        found.append((level, task, problems[0]))
    return found
