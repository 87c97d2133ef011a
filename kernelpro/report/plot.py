"""The speedup plot: the best speedup so far over iterations, and every judged variant as a point."""

from __future__ import annotations

import io

from kernelpro.search.tree import VariantTree

# One colour per verdict, so failures of different kinds stand apart.
VERDICT_COLOURS = {
    "ok": "#2a9d3f", "incorrect": "#e07b00", "compile_error": "#7b4fb3", "runtime_error": "#c62828",
    "timeout": "#6d4c41", "rejected": "#111111", "failed": "#9e9e9e",
}


def speedup_png(tree: VariantTree, title: str = "") -> bytes:
    """A PNG: correct variants at their speedup, the others on the zero line, coloured by verdict."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(8, 4.5), dpi=110)
    axes = figure.add_subplot()
    judged = [v for v in tree if v.parent_id is not None and v.status != "pending"]
    for verdict, colour in VERDICT_COLOURS.items():
        points = [v for v in judged if v.verdict == verdict]
        if points:
            axes.scatter([v.iteration for v in points], [v.speedup or 0.0 for v in points], color=colour,
                         label=verdict, zorder=3, s=28, marker="o" if verdict == "ok" else "x")
    iterations = sorted({v.iteration for v in judged})
    best, curve = 0.0, []
    for iteration in iterations:
        best = max([best, *(v.speedup or 0.0 for v in judged if v.iteration == iteration)])
        curve.append(best)
    if iterations:
        axes.step(iterations, curve, where="post", color="#1f5fa8", label="best so far", zorder=2)
    axes.axhline(1.0, color="#888888", linestyle="--", linewidth=1, label="reference")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("iteration")
    axes.set_ylabel("speedup over the reference (x)")
    axes.set_title(title or "speedup")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="upper left", fontsize=8)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()
