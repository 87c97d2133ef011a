"""The documentation: the site builds without a broken link or a page left out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_site_builds_strictly_with_every_page_in_the_nav(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").rglob("*.md"))
    built = [tmp_path / "site" / (p.parent if p.name == "index" else p) / "index.html" for p in pages]
    assert all(page.is_file() for page in built), [str(page) for page in built if not page.is_file()]
