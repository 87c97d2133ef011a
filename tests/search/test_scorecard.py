"""The two scorecards: kernelpro's speedup and KernelBench's convention (``EvalResult.kernelbench``), and which of
them decides whether a verdict improves and which variant is the tree's best (``search.scorecard``)."""

from __future__ import annotations

import pytest

from kernelpro.config import Settings
from kernelpro.harness.result import BELOW_MEMORY_FLOOR, GuardFinding, SecondOpinion
from kernelpro.harness.timing.scorecards import KernelBenchScore
from kernelpro.search.tree import VariantTree
from tests.conftest import problem
from tests.search.test_objective import verdict

HOST_BOUND_WIN = "graph capture: the host issues less"
GPU_WIN = "a fused kernel: less GPU time"


def kernelbench(speedup: float, low: float, high: float) -> KernelBenchScore:
    return KernelBenchScore(speedup=speedup, speedup_ci95=[low, high], reference_ms=1.0, candidate_ms=1.0 / speedup,
                            rounds=30, method="CUDA events behind an L2 flush, mean of calls, no host floor")


def scored(speedup: float, call: str, kb: KernelBenchScore | None, **extra):
    result = verdict(speedup, call)
    return result.model_copy(update={"kernelbench": kb, **extra})


def test_the_setting_defaults_to_kernelpro_and_refuses_an_unknown_scorecard():
    assert Settings().search.scorecard == "kernelpro"
    assert Settings.model_validate({"search": {"scorecard": "kernelbench"}}).search.scorecard == "kernelbench"
    with pytest.raises(ValueError, match="scorecard"):
        Settings.model_validate({"search": {"scorecard": "fastest"}})
    with pytest.raises(ValueError, match="unknown scorecard 'fastest'"):
        VariantTree(scorecard="fastest")


def test_improves_follows_the_chosen_scorecard():
    faster_by_events_only = scored(1.01, "same", kernelbench(1.3, 1.25, 1.35))
    assert not faster_by_events_only.improves_under("kernelpro", 0.02)
    assert faster_by_events_only.improves_under("kernelbench", 0.02)
    assert faster_by_events_only.kernelbench_call(0.02) == "faster"
    faster_by_kernelpro_only = scored(1.5, "faster", kernelbench(1.01, 0.99, 1.03))
    assert faster_by_kernelpro_only.improves_under("kernelpro", 0.02)
    assert not faster_by_kernelpro_only.improves_under("kernelbench", 0.02)
    # the interval's low end above 1 but the estimate under the minimum effect, as stats.speed_call decides
    assert not scored(1.5, "faster", kernelbench(1.015, 1.005, 1.03)).improves_under("kernelbench", 0.02)
    assert scored(1.5, "faster", kernelbench(1.015, 1.005, 1.03)).improves_under("kernelbench", 0.01)


def test_under_kernelbench_a_verdict_without_its_figure_or_on_a_busy_machine_or_untrusted_never_improves():
    assert not scored(2.0, "faster", None).improves_under("kernelbench", 0.02)
    assert scored(2.0, "faster", None).kernelbench_call(0.02) is None
    assert not scored(2.0, "faster", kernelbench(2.0, 1.9, 2.1), contended=True).improves_under("kernelbench", 0.02)
    assert not scored(2.0, "faster", kernelbench(2.0, 1.9, 2.1), correct=False).improves_under("kernelbench", 0.02)
    floor = GuardFinding(reason=BELOW_MEMORY_FLOOR, severity="warn", source="dynamic", message="too fast")
    below_floor = scored(2.0, "faster", kernelbench(2.0, 1.9, 2.1), guards=[floor])
    assert not below_floor.improves_under("kernelbench", 0.02)  # the second-opinion rule holds in both
    confirmed = below_floor.model_copy(update={"second_opinion": SecondOpinion(status="agree", speedup=2.0)})
    assert confirmed.improves_under("kernelbench", 0.02) and confirmed.improves_under("kernelpro", 0.02)


def tree_with(scorecard: str) -> VariantTree:
    tree = VariantTree.with_root(problem("scale_relu").source)
    tree.scorecard = scorecard
    for idea, result in ((HOST_BOUND_WIN, scored(1.8, "faster", kernelbench(1.05, 1.03, 1.07))),
                         (GPU_WIN, scored(1.3, "faster", kernelbench(1.6, 1.55, 1.65)))):
        tree.spawn(tree.root.id, f"# {idea}\n", idea, "llm", 1).record(result)
    return tree


def test_the_tree_s_best_order_and_finalists_read_the_chosen_scorecard():
    kernelpro, kernelbench_tree = tree_with("kernelpro"), tree_with("kernelbench")
    assert kernelpro.figure == "time" and kernelbench_tree.figure == "kernelbench"
    assert kernelpro.best().idea == HOST_BOUND_WIN
    assert kernelbench_tree.best().idea == GPU_WIN
    assert [v.idea for v in kernelbench_tree.correct()] == [GPU_WIN, HOST_BOUND_WIN]
    assert [v.idea for v in kernelbench_tree.finalists(1)] == [GPU_WIN]
    assert "KernelBench convention 1.60x" in kernelbench_tree.render_ascii()
    kernelbench_tree.min_effect = 0.1  # 1.05x in KernelBench's convention no longer counts, 1.6x does
    assert kernelbench_tree.best().idea == GPU_WIN


def test_under_kernelbench_no_best_without_the_figure():
    tree = VariantTree.with_root(problem("scale_relu").source)
    tree.scorecard = "kernelbench"
    tree.spawn(tree.root.id, "# unrefereed\n", "unrefereed", "llm", 1).record(scored(3.0, "faster", None))
    assert tree.best() is None
    tree.scorecard = "kernelpro"
    assert tree.best() is not None


def test_a_run_s_state_names_its_scorecard_and_minimum_effect():
    tree = tree_with("kernelbench")
    state = {"variants": tree.to_state(), "objective": "time", "scorecard": "kernelbench", "min_effect": 0.5}
    seen = VariantTree.of_run(state)
    assert (seen.scorecard, seen.min_effect) == ("kernelbench", 0.5)
    assert seen.best().idea == GPU_WIN  # 1.6x clears a 50% minimum effect
    state["min_effect"] = 0.7
    assert VariantTree.of_run(state).best() is None  # and no variant clears 70%
