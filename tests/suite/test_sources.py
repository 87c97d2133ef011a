"""Which problems a suite runs: KernelBench's layout and numbering, plain directories, list files, filters."""

from __future__ import annotations

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
