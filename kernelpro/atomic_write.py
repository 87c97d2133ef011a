"""Writing a file whole or not at all: a temporary file beside it, then an atomic rename over it.

Every file a run leaves (its candidates and verdicts, results.jsonl, the report, speedup.png, summary.json, the best
candidate) is written this way, so a full disk, a quota or a kill never leaves a 0-byte or half-written file: the
old version stays, or there was none.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def write_atomic(path: Path | str, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file in its directory, renamed over it.

    Whatever fails (the disk full, the directory not writable) raises an ``OSError`` with its own errno that names
    ``path`` itself rather than the temporary file, which is gone."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with open(tmp, "xb") as out:  # a name of its own: never another writer's file, never a link's target
            out.write(payload)
        os.replace(tmp, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(error, OSError) and error.errno is not None:
            raise OSError(error.errno, os.strerror(error.errno), str(path)) from error
        raise
