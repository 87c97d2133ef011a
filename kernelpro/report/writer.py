"""Writing a run's report files: Markdown, self-contained HTML and the speedup plot."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelpro.atomic_write import write_atomic
from kernelpro.report.html import render_html
from kernelpro.report.markdown import render_markdown
from kernelpro.report.plot import speedup_png
from kernelpro.report.summary import RunSummary
from kernelpro.search.tree import VariantTree


@dataclass(frozen=True)
class ReportPaths:
    markdown: Path
    html: Path
    plot: Path


def write_report(run: RunSummary, tree: VariantTree, out_dir: Path) -> ReportPaths:
    """Write ``report.md``, ``report.html`` and ``speedup.png`` into ``out_dir`` (created if missing), each whole or
    not at all (``write_atomic``)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = ReportPaths(markdown=out_dir / "report.md", html=out_dir / "report.html", plot=out_dir / "speedup.png")
    png = speedup_png(tree, title=f"{run.problem} ({run.device})")
    write_atomic(paths.plot, png)
    write_atomic(paths.markdown, render_markdown(run, tree, paths.plot.name))
    write_atomic(paths.html, render_html(run, tree, png))
    return paths
