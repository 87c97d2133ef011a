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


def judged_tree(*specs: tuple[float, str, bool]) -> VariantTree:
    """One correct candidate per iteration: (speedup, the judge's call, timed on a busy machine)."""
    tree = VariantTree.with_root(problem("scale_relu").source)
    for iteration, (speedup, call, busy) in enumerate(specs, start=1):
        child = tree.spawn(tree.root.id, candidate("honest_scale_relu") + f"\n# {iteration}", f"idea {iteration}",
                           "recipe:x", iteration)
        child.record(EvalResult(status="ok", correct=True, speedup=speedup, speedup_ci95=[speedup, speedup],
                                speed_verdict=call, contended=busy))
    return tree


def points_by_label(figure) -> dict[str, tuple[list[tuple[float, float]], tuple[float, ...]]]:
    """Each labelled scatter of the figure: its points and its face colour."""
    from matplotlib.colors import to_rgba

    found = {}
    for collection in figure.axes[0].collections:
        faces = collection.get_facecolors()
        colour = tuple(faces[0]) if len(faces) else to_rgba("none")
        found[collection.get_label()] = ([tuple(p) for p in collection.get_offsets()], colour)
    return found


def test_a_slower_candidate_is_drawn_as_worse_not_as_a_success():
    from matplotlib.colors import to_rgba

    found = points_by_label(speedup_figure(judged_tree((1.6, "faster", False), (0.5, "slower", False),
                                                       (1.0, "same", False))))
    green = to_rgba("#2a9d3f")
    assert found["faster"] == ([(1.0, 1.6)], green)
    slower_points, slower_colour = found["slower"]
    assert slower_points == [(2.0, 0.5)] and slower_colour != green
    red, _, blue, _ = slower_colour
    assert red > 0.8 and blue < 0.2  # red to orange: worse than the reference
    same_points, (r, g, b, _) = found["same (within the noise)"]
    assert same_points == [(3.0, 1.0)] and r == g == b  # grey: within the noise


def test_the_legend_sits_beside_the_axes_over_no_line_or_point():
    figure = speedup_figure(judged_tree((1.6, "faster", False), (0.5, "slower", False), (2.4, "faster", False)))
    figure.draw_without_rendering()  # lays the figure out, as saving it does
    axes = figure.axes[0]
    legends = [*figure.legends, *filter(None, [axes.get_legend()])]
    assert len(legends) == 1
    box, plot_area = legends[0].get_window_extent(), axes.get_window_extent()
    assert not box.overlaps(plot_area)
    assert 0 <= box.x0 and box.x1 <= figure.bbox.x1  # and inside the figure, so the saved image shows it


def test_points_timed_on_a_busy_machine_are_marked_and_the_legend_says_so():
    figure = speedup_figure(judged_tree((1.6, "faster", False), (2.2, "faster", True), (1.0, "same", True)))
    (label,) = [name for name in points_by_label(figure) if "contended" in name]
    assert points_by_label(figure)[label][0] == [(2.0, 2.2), (3.0, 1.0)]
    figure.draw_without_rendering()  # lays the figure out, as saving it does
    assert label in [text.get_text() for legend in figure.legends for text in legend.get_texts()]
