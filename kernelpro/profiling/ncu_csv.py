"""Read `ncu --csv --page raw --print-units base` output into KernelMetrics, one per profiled launch.

The layout: row 1 holds the column names, row 2 their units, then one row per launch. Numbers carry thousands
separators ("1,926,398,026.32"), uncollectable metrics read `n/a`, and ncu may print `==PROF==` or program lines
before the header when its stdout was captured directly.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from kernelpro.profiling.metrics import KernelMetrics

_ID_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
               "Grid Size", "Device", "CC"}
_MISSING = {"", "n/a", "N/A", "nan"}
_DIM = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")


class NcuCsvError(ValueError):
    """The text is not a raw-page ncu CSV."""


def _number(text: str) -> float | None:
    cleaned = text.strip().replace(",", "")
    if cleaned in _MISSING:
        return None
    try:
        return float(cleaned)
    except ValueError:
        return None


def _dims(text: str) -> tuple[int, int, int] | None:
    match = _DIM.fullmatch(text.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def short_name(full_name: str) -> str:
    """`void ns::kern<float>(float *, int)` -> `ns::kern<float>`: the function without return type or arguments."""
    name = full_name.strip()
    depth = 0
    for i, ch in enumerate(name):  # cut at the first "(" outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            name = name[:i]
            break
    if name.startswith("void "):
        name = name[5:]
    return name.strip()


def parse_ncu_csv(text: str) -> list[KernelMetrics]:
    rows = list(csv.reader(io.StringIO(text)))
    header = next((i for i, row in enumerate(rows) if "Kernel Name" in row and "ID" in row), None)
    if header is None:
        raise NcuCsvError("no ncu raw-page header (a row with 'ID' and 'Kernel Name'); was the profile taken with "
                          "`--csv --page raw`?")
    names = rows[header]
    units = rows[header + 1] if header + 1 < len(rows) else []
    if units and units[0].strip() not in ("",):  # the units row starts with an empty ID cell
        units = []
    start = header + (2 if units else 1)
    column = {name: i for i, name in enumerate(names)}
    kernels = []
    for row in rows[start:]:
        if len(row) < len(names) or _number(row[column["ID"]]) is None:
            continue
        values: dict[str, float] = {}
        unit_of: dict[str, str] = {}
        text_of: dict[str, str] = {}
        for i, name in enumerate(names):
            if name in _ID_COLUMNS:
                continue
            value = _number(row[i])
            if value is not None:
                values[name] = value
                if i < len(units) and units[i]:
                    unit_of[name] = units[i]
            elif row[i].strip() not in _MISSING:
                text_of[name] = row[i]
        full = row[column["Kernel Name"]]
        kernels.append(KernelMetrics(
            name=short_name(full), launch=int(float(row[column["ID"]])), values=values, units=unit_of,
            text=text_of, full_name=full,
            block=_dims(row[column["Block Size"]]) if "Block Size" in column else None,
            grid=_dims(row[column["Grid Size"]]) if "Grid Size" in column else None,
        ))
    return kernels


def read_ncu_csv(path: str | Path) -> list[KernelMetrics]:
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        raise NcuCsvError(f"cannot read {path}: {error.strerror}") from error
    try:
        return parse_ncu_csv(text)
    except NcuCsvError as error:
        raise NcuCsvError(f"{path}: {error}") from None
