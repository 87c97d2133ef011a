"""What every command's exit status means, and the specific line each kind of bad input gets (in process)."""

from __future__ import annotations

import json

import pytest
import torch
import typer
from typer.testing import CliRunner

import kernelpro
from kernelpro.cli import app
from kernelpro.cli.main import run
from kernelpro.cli.optimize import exit_code
from kernelpro.exit_codes import BAD_INPUT, FAILED, INTERNAL_ERROR, INTERRUPTED, NO_IMPROVEMENT, OK
from tests.conftest import DATA

runner = CliRunner()
PROBLEM = str(DATA / "problems" / "scale_relu.py")
CANDIDATE = str(DATA / "candidates" / "honest_scale_relu.py")
no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible here")


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == OK and result.output.strip() == f"kernelpro {kernelpro.__version__}"


def test_doctor_json_is_one_object_whose_ok_decides_the_exit_code():
    result = runner.invoke(app, ["doctor", "--json"])
    data = json.loads(result.stdout)
    assert data["kernelpro"] == kernelpro.__version__
    names = {check["name"] for check in data["checks"]}
    assert {"GPU", "nvcc", "ncu", "torch", "llm"} <= names
    assert all(set(check) == {"name", "ok", "detail", "required"} for check in data["checks"])
    assert data["ok"] == all(c["ok"] for c in data["checks"] if c["required"])
    assert result.exit_code == (OK if data["ok"] else FAILED)


@no_gpu
@pytest.mark.parametrize("command", [["eval", PROBLEM, CANDIDATE], ["optimize", PROBLEM], ["mcp", PROBLEM]])
def test_cuda_without_a_gpu_is_refused_before_anything_runs(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*command, "--device", "cuda"])
    assert result.exit_code == BAD_INPUT
    assert "--device cuda, but no GPU is usable here" in result.output and "--device cpu" in result.output
    assert list(tmp_path.iterdir()) == []  # no run directory to --resume that could never work


def test_an_unknown_device_is_bad_input():
    result = runner.invoke(app, ["eval", PROBLEM, CANDIDATE, "--device", "gpu"])
    assert result.exit_code == BAD_INPUT and "--device 'gpu': use one of auto, cpu, cuda" in result.output


@pytest.mark.parametrize("command", [["eval", "{p}", CANDIDATE], ["profile", "{p}"], ["optimize", "{p}"],
                                     ["mcp", "{p}"]])
def test_every_command_says_what_is_wrong_with_its_problem_file(command, tmp_path):
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\xff\xfe\x00 not text")
    not_kernelbench = tmp_path / "plain.py"
    not_kernelbench.write_text("x = 1\n")
    cases = {str(tmp_path / "missing.py"): "missing.py: no such file", str(tmp_path): "a directory, not a Python file",
             str(binary): "not a text file", str(not_kernelbench): "missing Model, get_inputs, get_init_inputs"}
    for path, said in cases.items():
        result = runner.invoke(app, [part.format(p=path) for part in command])
        assert result.exit_code == BAD_INPUT, (command, path, result.output)
        assert said in result.output and "Traceback" not in result.output, result.output


@pytest.mark.parametrize("command", [["eval", PROBLEM], ["profile", PROBLEM]])
def test_a_missing_or_directory_candidate_is_named(command, tmp_path):
    missing = runner.invoke(app, [*command, str(tmp_path / "nonexistent.py")])
    assert missing.exit_code == BAD_INPUT and "nonexistent.py: no such file" in missing.output
    directory = runner.invoke(app, [*command, str(tmp_path)])
    assert directory.exit_code == BAD_INPUT and "a directory, not a candidate file" in directory.output


def test_saved_profiles_and_memory_files_that_are_directories_are_named(tmp_path):
    csv = runner.invoke(app, ["diagnose", "--ncu-csv", str(tmp_path)])
    assert csv.exit_code == BAD_INPUT and "Is a directory" in csv.output
    imported = runner.invoke(app, ["memory", "import", str(tmp_path), "--path", str(tmp_path / "store")])
    assert imported.exit_code == BAD_INPUT and "a directory, not a JSON Lines file" in imported.output
    exported = runner.invoke(app, ["memory", "export", str(tmp_path / "no" / "such" / "x.jsonl")])
    assert exported.exit_code == BAD_INPUT and "no such directory" in exported.output


def test_mcp_refuses_an_unknown_transport():
    result = runner.invoke(app, ["mcp", "--transport", "sse"])
    assert result.exit_code == BAD_INPUT and "--transport 'sse': use stdio or http" in result.output


def test_an_optimize_run_ends_with_the_code_of_its_outcome():
    assert exit_code("completed", improved=True, stopped_by_user=False) == OK
    assert exit_code("stopped", improved=True, stopped_by_user=False) == OK  # a budget spent, a best found
    assert exit_code("completed", improved=False, stopped_by_user=False) == NO_IMPROVEMENT
    assert exit_code("stopped", improved=False, stopped_by_user=False) == NO_IMPROVEMENT
    assert exit_code("failed", improved=False, stopped_by_user=False) == FAILED
    assert exit_code("stopped", improved=True, stopped_by_user=True) == INTERRUPTED


def test_the_entry_point_maps_usage_errors_interrupts_and_bugs(capsys):
    probe = typer.Typer()

    @probe.command()
    def act(what: str) -> None:
        if what == "interrupt":
            raise KeyboardInterrupt
        if what == "bug":
            raise RuntimeError("an unexpected state")
        if what == "nothing":
            raise typer.Exit(code=NO_IMPROVEMENT)

    assert run(["ok"], probe) == OK
    assert run(["nothing"], probe) == NO_IMPROVEMENT
    assert run(["interrupt"], probe) == INTERRUPTED
    assert run(["bug"], probe) == INTERNAL_ERROR
    assert "RuntimeError: an unexpected state" in capsys.readouterr().err
    assert run(["ok", "--no-such-option"], probe) == BAD_INPUT
    assert run(["--version"]) == OK and capsys.readouterr().out.strip() == f"kernelpro {kernelpro.__version__}"


def test_earlier_verdicts_that_do_not_read_are_refused_before_a_run_starts(tmp_path):
    bad = tmp_path / "verdicts.jsonl"
    bad.write_text('{"source": "x = 1"}\n')
    runs = tmp_path / "runs"
    result = runner.invoke(app, ["optimize", PROBLEM, "--device", "cpu", "--runs-dir", str(runs),
                                 "--judged-before", str(bad)])
    assert result.exit_code == BAD_INPUT and "verdicts.jsonl, line 1: not a verdict with its source" in result.output
    assert not runs.exists()  # no run directory left behind
    again = runner.invoke(app, ["optimize", "--resume", "r-1", "--runs-dir", str(runs), "--judged-before", str(bad)])
    assert again.exit_code == BAD_INPUT and "--judged-before is for a new run" in again.output


def test_a_new_run_adopts_earlier_verdicts_and_answers_their_code_from_them(tmp_path, monkeypatch):
    from kernelpro.harness.result import EvalResult
    from kernelpro.problem import load_problem
    from kernelpro.recipes.catalogue import recipes_for
    from kernelpro.runs.judged_before import FILE_NAME, write_verdicts

    monkeypatch.setenv("KERNELPRO_SEARCH__FINALISTS", "0")
    monkeypatch.setenv("KERNELPRO_FORECAST__RECORD", "false")
    first = recipes_for(load_problem(PROBLEM), "cpu")[0]  # what the recipe policy judges first here
    earlier = EvalResult(status="incorrect", reason="value_mismatch", message="output differs")
    write_verdicts(tmp_path / "verdicts.jsonl", [("the suite's baseline", first.source, earlier)])
    runs = tmp_path / "runs"
    result = runner.invoke(app, ["optimize", PROBLEM, "--device", "cpu", "--runs-dir", str(runs), "--max-iters", "1",
                                 "--no-memory", "--json", "--judged-before", str(tmp_path / "verdicts.jsonl")])
    assert result.exit_code == NO_IMPROVEMENT, result.output
    assert "(the same code as the suite's baseline: its verdict, not judged again)" in result.output
    [run_dir] = runs.iterdir()
    assert (run_dir / FILE_NAME).read_text() == (tmp_path / "verdicts.jsonl").read_text()


def test_the_top_level_help_lists_every_exit_code_there_is():
    from kernelpro import exit_codes

    statuses = {value for name, value in vars(exit_codes).items() if name.isupper() and isinstance(value, int)}
    assert statuses == set(exit_codes.MEANINGS) and {0, 1, 2, 3, 4, 5, 130} <= statuses  # each has its words
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "300"}, terminal_width=300)
    assert result.exit_code == OK
    text = " ".join(result.output.split())
    listed = text[text.index("Exit codes: "):]
    for code, meaning in exit_codes.MEANINGS.items():
        assert f" {code} {meaning}" in listed
    assert "5 setup failed" in listed
