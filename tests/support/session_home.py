"""The test session's own HOME: every test, and every process a test starts, keeps kernelpro's files in a
temporary directory of the session, never in the developer's home.

``tests/conftest.py`` calls ``enter()`` before anything imports kernelpro (its home directory is read from HOME
at import), and it sets the variables in ``os.environ``, so every subprocess inherits them. A test that builds a
subprocess's environment from nothing starts from ``environment()``. An xdist worker inherits its controller's
session and keeps it. Nothing here imports kernelpro.
"""

from __future__ import annotations

import os
import pwd
import tempfile
from dataclasses import dataclass
from pathlib import Path

SESSION_VAR = "KP_TEST_SESSION_DIR"
"""The session's directory, for the processes (xdist workers) that inherit it."""
REAL_HOME_VAR = "KP_TEST_REAL_HOME"
"""The home directory the session started from: the one no test may write kernelpro's files into."""

XDG_DIRS = {"XDG_CACHE_HOME": ".cache", "XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share",
            "XDG_STATE_HOME": ".local/state"}

# kernelpro's data paths, each named explicitly as well: a process that keeps the session's KERNELPRO_ variables
# finds them here, and one that drops them (to choose its own settings) finds their defaults under the fake HOME.
DATA_PATHS = {"KERNELPRO_FORECAST__DATASET": "data/judged.jsonl", "KERNELPRO_MEMORY__PATH": "data/memory",
              "KERNELPRO_COMPILE__CACHE_DIR": "data/compile-cache",
              "KERNELPRO_COMPILE__INLINE_CACHE_DIR": "data/load-inline", "KERNELPRO_CACHE__ROOT": "data/cache",
              "KERNELPRO_CUTLASS__INDEX_DIR": "data/cutlass-index", "KERNELPRO_RUNS_DIR": "data/runs",
              "KERNELPRO_CHAT__DIR": "data/chats"}


@dataclass(frozen=True)
class SessionHome:
    root: Path
    real_home: Path
    owner: bool  # this process made the directory (the controller, or a run without xdist)

    @property
    def home(self) -> Path:
        return self.root / "home"


def _variables(root: Path) -> dict[str, str]:
    home = root / "home"
    return {"HOME": str(home), **{name: str(home / sub) for name, sub in XDG_DIRS.items()},
            **{name: str(root / sub) for name, sub in DATA_PATHS.items()}}


def enter() -> SessionHome:
    """Point HOME, the XDG directories and kernelpro's data paths into the session's directory (made on first
    call in the session's first process), in ``os.environ``."""
    inherited = os.environ.get(SESSION_VAR)
    if inherited and Path(inherited).is_dir() and os.environ.get(REAL_HOME_VAR):
        session = SessionHome(Path(inherited), Path(os.environ[REAL_HOME_VAR]), owner=False)
    else:
        real = Path(os.environ.get("HOME") or pwd.getpwuid(os.getuid()).pw_dir)
        session = SessionHome(Path(tempfile.mkdtemp(prefix="kernelpro-tests-")), real, owner=True)
        os.environ[SESSION_VAR], os.environ[REAL_HOME_VAR] = str(session.root), str(real)
    os.environ.update(_variables(session.root))
    session.home.mkdir(parents=True, exist_ok=True)
    return session


def environment(**extra: str) -> dict[str, str]:
    """An environment built from nothing for a subprocess: the system's PATH, the session's HOME and XDG
    directories (a process without HOME would find the real one in the password database), and ``extra``."""
    root = os.environ[SESSION_VAR]
    keep = {name: value for name, value in _variables(Path(root)).items() if not name.startswith("KERNELPRO_")}
    return {"PATH": "/usr/bin:/bin", **keep, SESSION_VAR: root, **WITHOUT_REFEREE, **extra}


WITHOUT_REFEREE = {"KERNELPRO_HARNESS__REFEREE": "false"}
"""What the session's processes judge without unless a test asks for it (``tests/conftest.py`` says why)."""
