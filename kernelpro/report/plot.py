"""The speedup plot: the best speedup so far over iterations, and every judged variant as a point."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from kernelpro.report.content import contended, tone
from kernelpro.search.tree import Variant, VariantTree

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Correct variants by their call against the reference (faster green, slower orange: worse, same grey), the
# failures by verdict, so failures of different kinds stand apart.
CALL_COLOURS = {"better": ("faster", "#2a9d3f"), "same": ("same (within the noise)", "#8c8c8c"),
                "worse": ("slower", "#d9480f")}
VERDICT_COLOURS = {
    "incorrect": "#e0a800", "compile_error": "#7b4fb3", "runtime_error": "#c62828",
    "timeout": "#6d4c41", "rejected": "#111111", "failed": "#9e9e9e",
}
CONTENDED_LABEL = "contended (timed on a busy machine)"


def speedup_figure(tree: VariantTree, title: str = "") -> Figure:
    """Correct variants at their speedup, coloured by their call (faster, same, slower), the others on the zero
    line, coloured by verdict; a ring round each point timed on a busy machine; the run's best so far as a step
    line from the reference (1x) to the right edge, rising only where a candidate is measurably faster (a slower
    candidate is never a best); whole iterations on the x axis; the legend beside the axes, over no data."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(9, 4.5), dpi=110, layout="constrained")
    axes = figure.add_subplot()
    judged = [v for v in tree if v.parent_id is not None and v.status != "pending"]
    correct = [v for v in judged if v.correct]
    for call, (label, colour) in CALL_COLOURS.items():  # the plotted speedup is the first verdict's: its call
        points = [v for v in correct if tone(v.result) == call]
        if points:
            axes.scatter([v.iteration for v in points], [v.speedup for v in points], color=colour, label=label,
                         zorder=3, s=28, marker="o")
    for verdict, colour in VERDICT_COLOURS.items():
        points = [v for v in judged if not v.correct and v.verdict == verdict]
        if points:
            axes.scatter([v.iteration for v in points], [0.0] * len(points), color=colour, label=verdict, zorder=3,
                         s=28, marker="x")
    busy = [v for v in judged if contended(v.result)]
    if busy:
        axes.scatter([v.iteration for v in busy], [v.speedup or 0.0 for v in busy], s=110, facecolors="none",
                     edgecolors="#333333", linewidths=1.2, label=CONTENDED_LABEL, zorder=5)
    last = max([1, *(v.iteration for v in judged)])
    curve = best_so_far(judged)
    xs, ys = [x for x, _ in curve] + [last + 0.5], [y for _, y in curve] + [curve[-1][1]]
    axes.step(xs, ys, where="post", color="#1f5fa8", linewidth=2, label="best so far", zorder=4)
    axes.axhline(1.0, color="#888888", linestyle="--", linewidth=1, label="reference")
    axes.set_xlim(-0.5, last + 0.5)  # room for at least two whole iterations, so no tick falls between them
    axes.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    axes.set_xlabel("iteration")
    axes.set_ylabel("speedup over the reference (x)")
    axes.set_title(title or "speedup")
    axes.grid(True, alpha=0.3)
    figure.legend(loc="outside right upper", fontsize=8)  # beside the axes: never over a line or a point
    return figure


def best_so_far(judged: list[Variant]) -> list[tuple[int, float]]:
    """(iteration, the run's best speedup up to it): the reference's 1x at iteration 0, then the deciding speedup
    of each candidate that improves on it (correct, faster beyond its interval), never falling."""
    curve = [(0, 1.0)]
    for iteration in sorted({v.iteration for v in judged}):
        gains = [v.deciding_speedup for v in judged if v.iteration == iteration and v.improves]
        curve.append((iteration, max([curve[-1][1], *(g for g in gains if g is not None)])))
    return curve


def speedup_png(tree: VariantTree, title: str = "") -> bytes:
    """The speedup figure as PNG bytes."""
    buffer = io.BytesIO()
    speedup_figure(tree, title).savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()
