"""Where kernelpro keeps its own files: the home directory, the user's cache, and the caches kept under one root."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

KERNELPRO_HOME = Path.home() / ".kernelpro"
# The user's cache directory (XDG): builds that can be thrown away and made again.
USER_CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kernelpro"
# Each cache's directory under the root, unless its own setting names another.
BASELINES_SUBDIR, COMPILE_SUBDIR, INLINE_SUBDIR = "baselines", "compile", "load-inline"


class CacheSettings(BaseModel):
    """What kernelpro keeps across runs and suites, under one root (``kernelpro cache`` shows and clears it)."""

    root: Path = USER_CACHE_DIR
    """The root of kernelpro's caches: the compile baselines' verdicts (``baselines/``), compiled NVRTC and nvcc
    kernels (``compile/``, unless ``compile.cache_dir`` names another directory) and built load_inline
    extensions (``load-inline/``, unless ``compile.inline_cache_dir`` does)."""
    baselines: Literal["reuse", "fresh", "off"] = "reuse"
    """``reuse``: a compile baseline's verdict measured before on the same problem source, GPU (or CPU), driver,
    torch, Triton, kernelpro and timing settings is reused instead of judged again, and every new one is kept;
    ``fresh`` (what ``--fresh`` on ``optimize`` and ``suite run`` sets): judged anew, and kept; ``off``: neither
    read nor written."""

    @property
    def baselines_dir(self) -> Path:
        return self.root.expanduser() / BASELINES_SUBDIR
