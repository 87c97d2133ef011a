from __future__ import annotations

import pytest

from kernelpro.problem import ProblemError, load_problem, load_problems, parse_problem
from tests.conftest import DATA


def test_load_problem_reads_name_and_source():
    p = load_problem(DATA / "problems" / "matmul_relu.py")
    assert p.name == "matmul_relu" and "class Model" in p.source


def test_load_problems_from_a_directory():
    problems = load_problems(DATA / "problems")
    assert [p.name for p in problems] == sorted(p.name for p in problems)
    assert {"matmul_relu", "softmax_wide", "scale_relu"} <= {p.name for p in problems}


@pytest.mark.parametrize(("source", "says"), [
    ("def broken(:\n", "not valid Python"),
    ("import torch\nclass Model(torch.nn.Module):\n    pass\n", "missing get_inputs, get_init_inputs"),
    ("def get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n", "missing Model"),
])
def test_bad_problems_get_specific_errors(source, says):
    with pytest.raises(ProblemError, match=says):
        parse_problem(source, "p")


def test_imported_names_count_as_definitions():
    parse_problem("from somewhere import Model, get_inputs, get_init_inputs\n", "p")


def test_missing_file_and_binary_file(tmp_path):
    with pytest.raises(ProblemError, match="no such file"):
        load_problem(tmp_path / "nope.py")
    binary = tmp_path / "bin.py"
    binary.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(ProblemError, match="not a text file"):
        load_problem(binary)
    with pytest.raises(ProblemError, match="no problem files"):
        load_problems(_empty(tmp_path))


def _empty(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    return d
