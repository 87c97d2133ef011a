"""Built extensions on disk, one directory per key, shared by every run and process.

An entry is ``<root>/<key[:2]>/<key>/`` holding ``<name>.so`` and ``entry.json`` (what was built, how long it
took). Builds happen in ``<root>/.staging/``; the library is packed into a new directory beside its entry and
published with one ``os.rename`` of that directory:
readers see a whole entry or none. Builders of one key take an exclusive ``flock`` on its lock file first, so
a second process waits for the first one's build and then finds it instead of building it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LIBRARY_SUFFIX = ".so"


class InlineCache:
    """The cache under ``root``."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser()

    def entry(self, key: str) -> Path:
        return self.root / key[:2] / key

    def lookup(self, key: str, name: str) -> Path | None:
        """The entry's directory when it holds ``<name>.so`` and its record, else None."""
        entry = self.entry(key)
        if (entry / f"{name}{LIBRARY_SUFFIX}").is_file() and (entry / "entry.json").is_file():
            return entry
        return None

    def record(self, key: str) -> dict[str, Any]:
        try:
            return json.loads((self.entry(key) / "entry.json").read_text())
        except (OSError, ValueError):
            return {}

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Hold ``key``'s build lock (blocking) for the duration; released if the holder dies."""
        locks = self.root / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        with open(locks / f"{key}.lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def staging(self, key: str) -> Path:
        """A new, empty build directory for ``key`` on the cache's file system (so publishing is a rename)."""
        base = self.root / ".staging"
        base.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(dir=base, prefix=f"{key[:16]}."))

    def publish(self, key: str, name: str, build_dir: Path, record: dict[str, Any]) -> Path:
        """Move the library built in ``build_dir`` into the entry for ``key`` and return the entry. If another
        process published it first, theirs stays (the same sources built the same way) and ours is dropped."""
        library = build_dir / f"{name}{LIBRARY_SUFFIX}"
        target = self.entry(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Packed beside the entry, so the rename never crosses a mount (a worker's namespace may split them).
        package = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{key[:16]}.entry."))
        try:
            shutil.copy2(library, package / library.name)
            (package / "entry.json").write_text(json.dumps({**record, "key": key, "name": name}, sort_keys=True))
            try:
                os.rename(package, target)
            except OSError:
                if self.lookup(key, name) is None:  # not a lost race: a leftover, or a file system that
                    _publish_files(package, target)  # refuses to rename directories (overlayfs: EXDEV)
        finally:
            shutil.rmtree(package, ignore_errors=True)
        return target


def _publish_files(package: Path, target: Path) -> None:
    """File by file, each replaced atomically, the record last: ``lookup`` sees the entry only once it is whole."""
    target.mkdir(parents=True, exist_ok=True)
    (target / "entry.json").unlink(missing_ok=True)
    for item in sorted(package.iterdir(), key=lambda p: p.name == "entry.json"):
        tmp = target / f".{item.name}.{os.getpid()}.tmp"
        shutil.copy2(item, tmp)
        os.replace(tmp, target / item.name)
