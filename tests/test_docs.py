"""The documentation: the site builds without a broken link or a page left out, and the README's set-up block is
what CI runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bash_blocks_under(markdown: str, heading: str) -> list[list[str]]:
    """The command lines (comments and blank lines left out) of each ```bash block in the section ``heading``."""
    section = markdown.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    return [[line.strip() for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
            for block in blocks]


def set_up_block(markdown: str) -> list[str]:
    blocks = bash_blocks_under(markdown, "## Set up")
    assert len(blocks) == 1, "the set-up section has one bash block, the whole set-up in order"
    return blocks[0]


def ci_commands() -> list[str]:
    """The install and test commands .ci/run runs."""
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    return [line for line in lines if line.startswith(("pip install", "python -m pytest"))]


def test_the_site_builds_strictly_with_every_page_in_the_nav(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("") for p in (ROOT / "docs").rglob("*.md"))
    built = [tmp_path / "site" / (p.parent if p.name == "index" else p) / "index.html" for p in pages]
    assert all(page.is_file() for page in built), [str(page) for page in built if not page.is_file()]


def test_the_readme_set_up_block_runs_what_ci_runs():
    readme = set_up_block((ROOT / "README.md").read_text())
    ci = ci_commands()
    assert ci == ['pip install torch==2.13.0 -e ".[dev]"', "python -m pytest"]
    assert [line for line in readme if line in ci] == ci, readme  # both, in CI's order
    assert readme[-1] == "python -m pytest" and readme[0].startswith("python3 -m venv")


def test_the_docs_set_up_block_is_the_readmes():
    readme = set_up_block((ROOT / "README.md").read_text())
    assert set_up_block((ROOT / "docs" / "getting-started.md").read_text()) == readme


def test_the_readme_links_resolve():
    readme = (ROOT / "README.md").read_text()
    targets = [t for t in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", readme) if "://" not in t]
    assert targets, "the README links into the documentation"
    assert [t for t in targets if not (ROOT / t).exists()] == []
