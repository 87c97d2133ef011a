"""The KernelBench parity benchmark's pure parts: the agreement it reports, the cases it picks and prepares, and
its refusal to run where KernelBench's evaluator cannot."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from kernelbench_parity import judge, prepare, select_cases, unusable  # noqa: E402
from kernelbench_parity_summary import agreement, summarize  # noqa: E402


def row(name: str, kernelpro: str, kernelbench: str | None, kp_speed: float | None = None,
        kp_own: float | None = None, kb_speed: float | None = None, reason: str | None = None,
        loose: dict | None = None) -> dict:
    kp = {"status": kernelpro, "reason": reason, "verdict": kernelpro if reason is None else f"{kernelpro}/{reason}",
          "kernelbench_speedup": kp_speed, "speedup": kp_own, "message": f"kernelpro on {name}"}
    if kernelbench in ("correct", "incorrect"):
        kb = {"outcome": "verdict", "compiled": True, "correctness": kernelbench == "correct", "speedup": kb_speed,
              "message": f"KernelBench on {name}"}
    else:
        kb = {"outcome": kernelbench, "message": f"KernelBench on {name}"}
    return {"case": name, "kernelpro": kp, "kernelbench": kb, "kernelbench_loose": loose}


def test_each_side_alone_calling_a_candidate_correct_is_a_miss_with_both_messages():
    rows = [row("a", "ok", "correct", 1.0, 1.0, 1.0), row("b", "ok", "incorrect"),
            row("c", "incorrect", "correct", reason="value_mismatch"), row("d", "compile_error", "incorrect",
                                                                            reason="missing_model_new")]
    correctness = agreement(rows, "kernelbench")["correctness"]
    assert (correctness["compared"], correctness["agree"], correctness["fraction"]) == (4, 2, 0.5)
    assert (correctness["both_correct"], correctness["both_incorrect"]) == (1, 1)
    assert (correctness["only_kernelpro_correct"], correctness["only_kernelbench_correct"]) == (1, 1)
    assert not correctness["met"]
    misses = agreement(rows, "kernelbench")["misses"]
    assert [(m["case"], m["kernelpro"], m["kernelbench"]) for m in misses] == [
        ("b", "ok", "incorrect"), ("c", "incorrect/value_mismatch", "correct")]
    assert misses[1]["kernelpro_message"] == "kernelpro on c" and misses[1]["kernelbench_message"] == "KernelBench on c"


def test_timeouts_and_the_judges_own_failures_are_left_out_and_counted():
    rows = [row("a", "ok", "correct", 1.0, 1.0, 1.0), row("b", "ok", "timeout"), row("c", "timeout", "incorrect"),
            row("d", "runtime_error", "correct", reason="worker_error"), row("e", "ok", "crashed")]
    correctness = agreement(rows, "kernelbench")["correctness"]
    assert (correctness["compared"], correctness["agree"], correctness["met"]) == (1, 1, True)
    assert correctness["excluded"] == {"kernelbench_crashed": 1, "kernelbench_timeout": 1, "kernelpro_runtime_error": 1,
                                       "kernelpro_timeout": 1}


def test_guard_rejections_are_counted_apart_by_kernelbenchs_call():
    rows = [row("a", "rejected", "correct", reason="tensor_subclass"), row("b", "rejected", "incorrect"),
            row("c", "ok", "correct", 1.0, 1.0, 1.0)]
    correctness = agreement(rows, "kernelbench")["correctness"]
    assert correctness["compared"] == 1
    assert correctness["rejected_by_kernelpro"] == {"kernelbench_correct": 1, "kernelbench_incorrect": 1}


def test_speedups_agree_within_a_tenth_of_kernelbenchs_either_way_for_each_scorecard():
    rows = [row("up", "ok", "correct", 2.18, 3.0, 2.0), row("down", "ok", "correct", 1.82, 1.8, 2.0),
            row("high", "ok", "correct", 2.3, 2.0, 2.0), row("low", "ok", "correct", 0.85, 0.99, 1.0),
            row("none", "ok", "correct", None, 1.0, 1.0)]
    result = agreement(rows, "kernelbench")
    ours = result["speedup_kernelbench_scorecard"]
    assert (ours["compared"], ours["within_10pct"], ours["no_figure"]) == (4, 2, 1)
    assert ours["fraction"] == 0.5 and not ours["met"]
    own = result["speedup_kernelpro_scorecard"]
    assert (own["compared"], own["within_10pct"]) == (5, 4)  # only "up" (3.0 against 2.0) is off
    speed_misses = [(m["case"], m["kernelpro"], m["kernelbench"]) for m in result["misses"] if m["kind"] == "speedup"]
    assert speed_misses == [("high", 2.3, 2.0), ("low", 0.85, 1.0)]


def test_the_view_at_1e_2_reads_kernelbenchs_second_answer_where_it_was_asked_again():
    loose = {"outcome": "verdict", "compiled": True, "correctness": True, "speedup": 1.5, "message": ""}
    rows = [row("tf32", "ok", "incorrect", 1.52, 1.6, loose=loose), row("plain", "ok", "correct", 1.0, 1.0, 1.0)]
    summary = summarize(rows)
    strict, relaxed = summary["against_kernelbench"], summary["against_kernelbench_at_1e-2"]
    assert (strict["correctness"]["agree"], relaxed["correctness"]["agree"]) == (1, 2)
    assert relaxed["speedup_kernelbench_scorecard"]["within_10pct"] == 2
    assert summary["kernelbench_asked_again_at_1e-2"] == 1


def test_cases_are_the_directories_with_a_candidate_matching_the_pattern_sorted_and_limited(tmp_path):
    for name in ["first_L2_T001", "current_L1_T008", "current_L2_T001", "current_L3_T014"]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "candidate.py").write_text("")
    (tmp_path / "current_L1_T999").mkdir()  # no candidate
    assert [p.name for p in select_cases(tmp_path)] == ["current_L1_T008", "current_L2_T001", "current_L3_T014",
                                                        "first_L2_T001"]
    assert [p.name for p in select_cases(tmp_path, "*_L2_*")] == ["current_L2_T001", "first_L2_T001"]
    assert [p.name for p in select_cases(tmp_path, "current_*", limit=2)] == ["current_L1_T008", "current_L2_T001"]


def test_prepare_keeps_only_candidates_that_build_nothing_while_judged(tmp_path):
    reference = "import torch\nclass Model(torch.nn.Module):\n    pass\n"
    def entry(task: int, code: str, score: str | None = None) -> dict:
        return {"task_id": task, "ref_code": reference, "custom_code": code, **({"score": score} if score else {})}
    current = {"1": [entry(1, "plain torch", "2.0"), entry(2, "load_inline(...)", "9.0"),
                     entry(3, "torch.compile(model)", "5.0")],
               "2": [entry(4, "from torch.utils.cpp_extension import load", "3.0"), entry(5, "CUDAGraph", "1.5")]}
    first = "\n".join(json.dumps({"level_id": level, **entry(t, c)})  # JSON lines, no claims
                      for level, t, c in [(1, 1, "load_inline(x)"), (1, 3, "plain"), (2, 5, "graphs")])
    (tmp_path / "current.json").write_text(json.dumps(current))
    (tmp_path / "first.jsonl").write_text(first)
    out = tmp_path / "cases"
    prepare(argparse.Namespace(out=str(out), source=[f"current={tmp_path / 'current.json'}",
                                                    f"first={tmp_path / 'first.jsonl'}"],
                               per_level=4, without=[], kernelbench_git=None, kernelbench_out=None))
    # tasks are chosen on the source that claims speedups, among its candidates that build nothing: task 3 is
    # not, though the first release's candidate for it builds nothing
    assert sorted(p.name for p in out.iterdir()) == ["current_L1_T001", "current_L2_T005", "first_L2_T005"]
    assert json.loads((out / "current_L2_T005" / "meta.json").read_text())["claimed_speedup"] == 1.5
    assert (out / "first_L2_T005" / "candidate.py").read_text() == "graphs"


def test_a_run_without_cuda_is_refused_with_the_reason_before_anything_is_judged(tmp_path):
    src = tmp_path / "src"
    (src / "kernelbench").mkdir(parents=True)
    assert "CUDA only" in unusable("cpu", src, cuda_available=True)
    assert "sees no CUDA device" in unusable("cuda", src, cuda_available=False)
    assert "no kernelbench/eval.py" in unusable("cuda", src, cuda_available=True)
    (src / "kernelbench" / "eval.py").write_text("")
    assert unusable("cuda:0", src, cuda_available=True) is None
    args = argparse.Namespace(device="cpu", kernelbench=str(src), cases=str(tmp_path), cases_glob="*", limit=2)
    with pytest.raises(SystemExit, match="--device cpu: KernelBench's evaluator runs on CUDA only"):
        judge(args)
