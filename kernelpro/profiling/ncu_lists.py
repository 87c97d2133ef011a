"""What Nsight Compute can collect: its sections, section sets and rules, from ``ncu --list-*`` or from a report.

``ncu --list-sections``, ``--list-sets`` and ``--list-rules`` need no GPU, only an ncu install; they print
fixed-width tables ruled with dashes, which :func:`parse_table` reads (a row whose first column is blank
continues the row above, as the set listing wraps its section names). Without ncu, a saved ``.ncu-rep``
still tells which sections and rules were collected for its kernels (``ncu_details``).
"""

from __future__ import annotations

import re
import subprocess

from kernelpro.profiling.ncu_command import find_ncu

LIST_TIMEOUT_S = 60.0
_RULE = re.compile(r"^-+( +-+)*\s*$")


class NcuListError(RuntimeError):
    """ncu is not installed, or it did not answer."""


def _column_starts(rule: str) -> list[int]:
    return [m.start() for m in re.finditer(r"-+", rule)]


def _cells(line: str, starts: list[int]) -> list[str]:
    """The line cut at the columns' starts; a cut that would split a word moves to the word's end (a long value
    may run past its column's ruler)."""
    cuts = []
    for start in starts[1:]:
        cut = max(start, cuts[-1] if cuts else 0)
        while 0 < cut < len(line) and line[cut - 1] != " " and line[cut] != " ":
            cut += 1
        cuts.append(cut)
    bounds = [0, *cuts, None]
    return [line[bounds[i]:bounds[i + 1]].strip() for i in range(len(starts))]


def parse_table(text: str) -> list[dict[str, str]]:
    """The rows of one of ncu's dash-ruled tables, keyed by the header's column names."""
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if _RULE.match(line) and line.strip()]
    if not rules:
        return []
    starts = _column_starts(lines[rules[0]])
    # The header is the line above the first ruler, or (ruled above and below) the line below it.
    header_at = rules[0] - 1 if rules[0] > 0 and lines[rules[0] - 1].strip() else rules[0] + 1
    header = _cells(lines[header_at], starts)
    ruled_below = header_at + 1 < len(lines) and _RULE.match(lines[header_at + 1])
    body_start = header_at + 2 if ruled_below else header_at + 1
    rows: list[dict[str, str]] = []
    for line in lines[body_start:]:
        if not line.strip() or _RULE.match(line):
            continue
        cells = _cells(line, starts)
        if not cells[0] and rows:  # a wrapped row: its text belongs to the row above
            for name, cell in zip(header, cells, strict=True):
                if cell:
                    rows[-1][name] = f"{rows[-1][name]} {cell}".strip()
            continue
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def ncu_listing(flag: str, ncu: str = "ncu") -> list[dict[str, str]]:
    """One of ``--list-sections``, ``--list-sets``, ``--list-rules``, as rows."""
    found = find_ncu(ncu)
    if found is None:
        raise NcuListError(f"ncu (Nsight Compute) is not installed here, so `ncu {flag}` cannot run; give a saved "
                           ".ncu-rep instead to see the sections and rules it holds")
    try:
        done = subprocess.run([found, flag], capture_output=True, text=True, timeout=LIST_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NcuListError(f"`ncu {flag}` failed: {error}") from None
    rows = parse_table(done.stdout)
    if done.returncode != 0 or not rows:
        detail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no table in its output"]
        raise NcuListError(f"`ncu {flag}` exited with {done.returncode}: {detail[0]}")
    return rows
