"""KernelBench-format problems: a ``Model``, ``get_inputs()`` and ``get_init_inputs()`` in one Python file.

Loading here only reads and parses the file: the problem's code runs in the judge's worker process,
never in the process that loads it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")


class ProblemError(ValueError):
    """A file that is not a usable KernelBench-format problem."""


@dataclass(frozen=True)
class Problem:
    """A reference implementation to be made faster."""

    name: str
    source: str
    path: Path | None = None


def module_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level: classes, functions, assignments and imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def parse_problem(source: str, name: str, path: Path | None = None) -> Problem:
    """Check that ``source`` looks like a KernelBench problem and wrap it."""
    try:
        tree = ast.parse(source, filename=str(path or name))
    except SyntaxError as exc:
        raise ProblemError(f"{path or name}: not valid Python (line {exc.lineno}: {exc.msg})") from exc
    missing = [n for n in REQUIRED_NAMES if n not in module_level_names(tree)]
    if missing:
        raise ProblemError(
            f"{path or name}: a KernelBench problem defines Model, get_inputs and get_init_inputs; "
            f"missing {', '.join(missing)}"
        )
    return Problem(name=name, source=source, path=path)


def read_source_file(path: str | Path) -> str:
    """A Python source file's text; a missing, unreadable or binary file is a ``ProblemError`` that says which."""
    path = Path(path)
    if path.is_dir():
        raise ProblemError(f"{path}: a directory, not a Python file")
    if not path.exists():
        raise ProblemError(f"{path}: no such file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ProblemError(f"{path}: not a text file ({exc.reason})") from exc
    except OSError as exc:
        raise ProblemError(f"{path}: cannot be read ({exc.strerror})") from exc


def load_problem(path: str | Path) -> Problem:
    """Read one problem file."""
    path = Path(path)
    return parse_problem(read_source_file(path), name=path.stem, path=path)


def load_problems(directory: str | Path) -> list[Problem]:
    """Every problem file in a directory, sorted by name; files that are not problems are an error."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ProblemError(f"{directory}: not a directory")
    files = sorted(p for p in directory.glob("*.py") if not p.name.startswith("_"))
    if not files:
        raise ProblemError(f"{directory}: no problem files (*.py)")
    return [load_problem(p) for p in files]
