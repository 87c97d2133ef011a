"""The speedup plot: whole iterations on the x axis and a best-so-far line from the reference that shows, even for
one candidate, and rises only for a measurably faster one."""

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
        call = "faster" if speedup and speedup > 1.05 else "slower" if speedup and speedup < 0.95 else "same"
        child.record(EvalResult(status="ok", correct=True, speedup=speedup, speedup_ci95=[speedup, speedup],
                                speed_verdict=call)
                     if speedup is not None else EvalResult(status="incorrect", reason="mismatch"))
    return tree


def best_line(tree: VariantTree):
    axes = speedup_figure(tree).axes[0]
    (line,) = [li for li in axes.get_lines() if li.get_label() == "best so far"]
    return axes, line.get_xydata()


def test_a_one_candidate_run_has_whole_iteration_ticks_and_a_visible_best_line():
    axes, points = best_line(tree_of(1.43))
    ticks = [t for t in axes.get_xticks() if axes.get_xlim()[0] <= t <= axes.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks) and 1 in ticks
    assert points[:, 0].max() - points[:, 0].min() > 0  # a segment, not a lone point
    assert list(points[:, 1]) == [1.0, 1.43, 1.43]  # from the reference up to the candidate, to the edge


def test_the_best_line_rises_only_for_measurably_faster_candidates_and_never_falls():
    _, points = best_line(tree_of(None, 0.8, 1.6, 1.2, 1.02))
    assert list(points[:, 0]) == [0, 1, 2, 3, 4, 5, 5.5]
    assert list(points[:, 1]) == [1.0, 1.0, 1.0, 1.6, 1.6, 1.6, 1.6]


def test_a_run_without_a_faster_candidate_keeps_its_best_at_the_reference():
    _, points = best_line(tree_of(0.43, 0.57))
    assert set(points[:, 1]) == {1.0}  # a slower candidate is never the best
