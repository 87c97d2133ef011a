"""The suite report's plots, in the run report's style (matplotlib, Agg, PNG bytes): the fast_p curve against
eager and against the fastest compile baseline, and the histogram of speedups."""

from __future__ import annotations

import io
import math

from kernelpro.suite.scores import ProblemScore


def _figure():
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4), dpi=110)
    return figure, figure.add_subplot()


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


def fast_p_png(problems: list[ProblemScore], against_compile: bool = True) -> bytes:
    """fast_p as a curve over p from 0 to 3 (or past the largest speedup), against eager and (when measured)
    against compile, each in a band from the problems surely faster than p to those possibly so (their
    intervals')."""
    scored = [p for p in problems if p.scored]
    figure, axes = _figure()
    top = max([3.0, *(min(p.speedup or 0.0, 20.0) * 1.05 for p in scored)])
    grid = [top * i / 300 for i in range(301)]
    curves = [("against eager", [p.speedup for p in scored], [p.measured for p in scored], "#1f5fa8")]
    if against_compile:
        curves.append(("against the fastest torch.compile", [p.vs_compile for p in scored],
                       [p.measured_vs_compile for p in scored], "#e07b00"))
    total = max(1, len(scored))
    for label, values, measured, colour in curves:
        shares = [sum(1 for v in values if v is not None and v > x) / total for x in grid]
        axes.step(grid, shares, where="post", label=label, color=colour)
        surely = [sum(1 for m in measured if m is not None and m.low > x) / total for x in grid]
        possibly = [sum(1 for m in measured if m is not None and m.high > x) / total for x in grid]
        axes.fill_between(grid, surely, possibly, step="post", color=colour, alpha=0.18, linewidth=0)
    for p in (1.0, 1.2, 1.5, 2.0):
        axes.axvline(p, color="#bbbbbb", linestyle=":", linewidth=1)
    axes.set_xlabel("p (speedup threshold)")
    axes.set_ylabel("fast_p: share of problems correct and faster than p")
    axes.set_ylim(0, 1.02)
    axes.set_title(f"fast_p over {len(scored)} problem(s); shaded: where their intervals allow it to lie")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="upper right", fontsize=8)
    return _png(figure)


def histogram_png(problems: list[ProblemScore]) -> bytes:
    """Correct problems' speedups over eager, on a log axis, improved ones apart from those kept."""
    figure, axes = _figure()
    values = [p for p in problems if p.scored and p.speedup]
    if values:
        low = min(math.log2(p.speedup or 1.0) for p in values)
        high = max(math.log2(p.speedup or 1.0) for p in values)
        low, high = min(low, -0.5), max(high, 0.5)
        bins = [2 ** (low + (high - low) * i / 20) for i in range(21)]
        axes.hist([[p.speedup for p in values if p.improved], [p.speedup for p in values if not p.improved]],
                  bins=bins, stacked=True, color=["#2a9d3f", "#9e9e9e"],
                  label=["improved (re-judged faster)", "kept the reference"])
        axes.set_xscale("log", base=2)
    axes.axvline(1.0, color="#888888", linestyle="--", linewidth=1)
    axes.set_xlabel("speedup over eager (x, log scale)")
    axes.set_ylabel("problems")
    axes.set_title("speedups of correct problems")
    axes.grid(True, alpha=0.3)
    if values:
        axes.legend(loc="upper left", fontsize=8)
    return _png(figure)
