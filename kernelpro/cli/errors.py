"""How every command reports input it cannot work with: one red line on stderr, exit code 2 (``BAD_INPUT``).

Storage that cannot be written (a full disk, a quota, a read-only or forbidden directory) is told the same way:
the path and what the system said, never a traceback."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from kernelpro.exit_codes import BAD_INPUT

errors = Console(stderr=True)

STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES, errno.EPERM, errno.EROFS})
"""What the storage answers a write it cannot take: the machine's state, not a bug."""
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def fail(message: str, code: int = BAD_INPUT) -> NoReturn:
    errors.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code=code)


def storage_error(error: BaseException, database: Path | None = None) -> OSError | None:
    """The write the storage refused behind ``error`` (or what caused it), as an ``OSError`` naming its path;
    None for anything else. SQLite's "database or disk is full", "readonly database" and "disk I/O error" (what a
    full disk gives when its shared-memory file cannot grow) are ``database``'s."""
    seen: BaseException | None = error
    for _ in range(8):  # the error, then what it was raised from
        if seen is None:
            return None
        if isinstance(seen, OSError) and seen.errno in STORAGE_ERRNOS and seen.filename:
            return seen
        if isinstance(seen, sqlite3.Error) and database is not None:
            code = (getattr(seen, "sqlite_errorcode", None) or 0) & 0xFF
            if code == sqlite3.SQLITE_FULL or "disk is full" in str(seen):
                return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(database))
            if code == sqlite3.SQLITE_READONLY or "readonly database" in str(seen):
                return OSError(errno.EACCES, os.strerror(errno.EACCES), str(database))
            if code == sqlite3.SQLITE_IOERR or "disk I/O error" in str(seen):
                return OSError(errno.EIO, os.strerror(errno.EIO), str(database))
        seen = seen.__cause__ or seen.__context__
    return None


def cannot_write(error: OSError, where: Path | str | None = None) -> str:
    """``cannot write to PATH: No space left on device``: ``where`` (default: the file the write was for) and
    what the system said."""
    return f"cannot write to {where if where is not None else error.filename}: {os.strerror(error.errno or 0)}"


def cannot_write_run(error: OSError, run_id: str) -> str:
    """``cannot_write``, for a run that exists: what it judged is in its directory, and how to go on."""
    fix = ("free space" if error.errno in _NO_ROOM else "free space or fix the disk" if error.errno == errno.EIO
           else "make it writable")
    return f"{cannot_write(error)}; nothing judged is lost; {fix} and resume with: kernelpro optimize --resume {run_id}"
