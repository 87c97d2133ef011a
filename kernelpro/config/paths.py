"""Where kernelpro keeps its own files: the home directory and the user's cache."""

from __future__ import annotations

import os
from pathlib import Path

KERNELPRO_HOME = Path.home() / ".kernelpro"
# The user's cache directory (XDG): builds that can be thrown away and made again.
USER_CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelpro"
