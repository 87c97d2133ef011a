"""The speedup plot: whole iterations on the x axis and a best-so-far line that shows, even for one candidate."""

from __future__ import annotations

from kernelpro.harness.result import EvalResult
from kernelpro.report.plot import speedup_figure
from kernelpro.search.tree import VariantTree
from tests.conftest import candidate, problem


def tree_of(*speedups: float | None) -> VariantTree:
    """One judged candidate per iteration: a speedup, or None for an incorrect one."""
    tree = VariantTree.with_root(problem("scale_relu").source)
    for iteration, speedup in enumerate(speedups, start=1):
        child = tree.spawn(tree.root.id, candidate("honest_scale_relu"), f"idea {iteration}", "recipe:x", iteration)
        child.record(EvalResult(status="ok", correct=True, speedup=speedup, speedup_ci95=[speedup, speedup])
                     if speedup is not None else EvalResult(status="incorrect", reason="mismatch"))
    return tree


def best_line(tree: VariantTree):
    axes = speedup_figure(tree).axes[0]
    (line,) = [li for li in axes.get_lines() if li.get_label() == "best so far"]
    return axes, line.get_xydata()


def test_a_one_candidate_run_has_whole_iteration_ticks_and_a_visible_best_line():
    axes, points = best_line(tree_of(0.43))
    ticks = [t for t in axes.get_xticks() if axes.get_xlim()[0] <= t <= axes.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks) and 1 in ticks
    assert points[:, 0].max() - points[:, 0].min() > 0  # a segment, not a lone point
    assert set(points[:, 1]) == {0.43}


def test_the_best_line_counts_correct_candidates_only_and_never_falls():
    _, points = best_line(tree_of(None, 0.8, 1.6, 1.2))
    assert points[0, 0] == 2  # it starts at the first correct candidate
    assert list(points[:, 1]) == [0.8, 1.6, 1.6, 1.6]
