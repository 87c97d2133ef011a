"""Which problems a suite runs: KernelBench's layout and numbering, plain directories, list files, filters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelpro.suite.sources import SourceError, parse_tasks, resolve_sources
from tests.conftest import DATA

PROBLEM = (DATA / "problems" / "scale_relu.py").read_text()


def checkout(root: Path) -> Path:
    """A KernelBench-shaped checkout made of our own tiny problem, under KernelBench's names."""
    for level, names in {1: ["19_ReLU", "2_Matmul", "40_Norm"], 2: ["1_Conv_ReLU"]}.items():
        folder = root / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True)
        for name in names:
            (folder / f"{name}.py").write_text(PROBLEM)
    return root


def test_a_kernelbench_checkout_keeps_its_levels_and_task_ids(tmp_path):
    root = checkout(tmp_path / "kb")
    refs = resolve_sources([root])
    assert [r.key for r in refs] == ["level1/2_Matmul", "level1/19_ReLU", "level1/40_Norm", "level2/1_Conv_ReLU"]
    assert (refs[1].level, refs[1].task) == (1, 19)
    chosen = resolve_sources([root], levels=[1], tasks="1-20,40")
    assert [r.key for r in chosen] == ["level1/2_Matmul", "level1/19_ReLU", "level1/40_Norm"]
    assert [r.key for r in resolve_sources([root / "KernelBench" / "level2"])] == ["level2/1_Conv_ReLU"]
    assert [r.key for r in resolve_sources([root / "KernelBench"], levels=[2])] == ["level2/1_Conv_ReLU"]


def test_a_directory_and_a_list_file(tmp_path):
    refs = resolve_sources([DATA / "problems"])
    assert "scale_relu" in [r.key for r in refs] and all(r.level is None for r in refs)
    root = checkout(tmp_path / "kb")
    listing = tmp_path / "tasks.txt"
    listing.write_text(f"# robust subset\n{DATA / 'problems' / 'scale_relu.py'}\n\nkb/KernelBench/level1/19_ReLU.py\n")
    assert [r.key for r in resolve_sources([listing])] == ["scale_relu", "level1/19_ReLU"]
    assert [r.key for r in resolve_sources([listing, root], levels=[1], tasks="19")] == ["level1/19_ReLU"]


def test_bad_sources_and_filters_say_what_is_wrong(tmp_path):
    with pytest.raises(SourceError, match="no such file or directory"):
        resolve_sources([tmp_path / "missing"])
    listing = tmp_path / "tasks.txt"
    listing.write_text("nowhere.py\n")
    with pytest.raises(SourceError, match="tasks.txt:1: nowhere.py: no such problem file"):
        resolve_sources([listing])
    with pytest.raises(SourceError, match="no problems found .* at level 3"):
        resolve_sources([checkout(tmp_path / "kb")], levels=[3])
    assert parse_tasks("1-3, 7") == {1, 2, 3, 7} and parse_tasks(None) is None
    for bad in ("a-3", "5-2", "1,,2"):
        with pytest.raises(SourceError):
            parse_tasks(bad)


def robust_checkout(root: Path) -> Path:
    """A robust-kbench-shaped checkout (hand-written, in its layout): level_<N>/task_<K>/ with the problem under
    KernelBench's name, robust-kbench's own function file and the filter results."""
    flags = ("filter_output_range", "filter_output_std", "filter_output_axes", "filter_input_impact",
             "filter_llm_redundancy", "filter_llm_inefficiency")
    tasks = {(1, 19, "19_ReLU"): [], (1, 2, "2_Matmul"): ["filter_input_impact", "filter_output_std"],
             (1, 40, "40_Norm"): ["filter_llm_inefficiency"], (1, 7, "7_Unjudged"): None, (2, 5, "5_Conv_Tanh"): []}
    for (level, task, name), filters in tasks.items():
        folder = root / "tasks" / "kernelbench" / f"level_{level}" / f"task_{task}"
        folder.mkdir(parents=True)
        (folder / f"{name}.py").write_text(PROBLEM)
        (folder / "func_forward.py").write_text("def forward_fn(x):\n    return x\n")
        if filters is not None:
            (folder / "filter_results.json").write_text(json.dumps(
                {**{flag: flag in filters for flag in flags}, "filter_llm_assessment": "no"}))
    (root / "tasks" / "layernorm").mkdir()  # robust-kbench's own tasks are not KernelBench problems
    (root / "tasks" / "layernorm" / "func_forward.py").write_text("def forward_fn(x):\n    return x\n")
    return root


def test_a_robust_kbench_checkout_gives_the_tasks_its_filters_pass(tmp_path):
    root = robust_checkout(tmp_path / "robust-kbench")
    refs = resolve_sources([root])
    assert [r.key for r in refs] == ["level1/19_ReLU", "level2/5_Conv_Tanh"]  # flagged and unjudged tasks left out
    assert (refs[0].level, refs[0].task) == (1, 19) and refs[0].path.endswith("task_19/19_ReLU.py")
    assert [r.key for r in resolve_sources([root / "tasks" / "kernelbench"], levels=[2])] == ["level2/5_Conv_Tanh"]
    assert [r.key for r in resolve_sources([root / "tasks" / "kernelbench" / "level_1"])] == ["level1/19_ReLU"]
    # the output checks alone: the language model's verdict no longer excludes a task
    only_outputs = resolve_sources([root], levels=[1], robust_filters=["filter_output_std", "filter_input_impact"])
    assert [r.key for r in only_outputs] == ["level1/19_ReLU", "level1/40_Norm"]


def test_bad_robust_kbench_filter_results_say_which_task(tmp_path):
    root = robust_checkout(tmp_path / "robust-kbench")
    with pytest.raises(SourceError, match=r"task_2/filter_results.json: no filter filter_nope \(it has "):
        resolve_sources([root], robust_filters=["filter_nope"])
    (root / "tasks" / "kernelbench" / "level_1" / "task_19" / "filter_results.json").write_text("{oops")
    with pytest.raises(SourceError, match="task_19/filter_results.json: not readable filter results"):
        resolve_sources([root])
