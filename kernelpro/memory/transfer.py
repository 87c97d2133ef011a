"""Records as JSON Lines: one object a line, the form in which a memory is exported and imported."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from kernelpro.atomic_write import write_atomic
from kernelpro.memory.errors import MemoryStoreError
from kernelpro.memory.records import Record, record_from_json


def write_jsonl(records: Sequence[Record], file: Path) -> None:
    """Write ``records`` to ``file``, replacing it only once the whole file is written."""
    try:
        write_atomic(file, "".join(record.model_dump_json() + "\n" for record in records))
    except OSError as exc:
        raise MemoryStoreError(f"cannot write {file}: {exc}") from exc


def read_jsonl(file: Path) -> list[Record]:
    """Every record in ``file``; blank lines are skipped, and a malformed line is an error naming its number."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise MemoryStoreError(f"cannot read {file}: {exc}") from exc
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        records.append(_record(line, f"{file}:{number}"))
    return records


def _record(line: str, where: str) -> Record:
    """One line as a record, or an error saying what is wrong with it: not JSON, not an object, or which field."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise MemoryStoreError(f"{where}: not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(data, dict):
        raise MemoryStoreError(f"{where}: not a memory record: a JSON object is expected, got {type(data).__name__}")
    try:
        return record_from_json(line)
    except ValidationError as exc:
        problems = []
        for error in exc.errors()[:3]:
            field = ".".join(str(part) for part in error["loc"] if not isinstance(part, int))
            problems.append(f"{field or 'the record'}: {error['msg']}")
        kinds = f" (kind {data['kind']!r})" if "kind" in data else " (it has no 'kind')"
        raise MemoryStoreError(f"{where}: not a memory record{kinds}: {'; '.join(problems)}") from None
