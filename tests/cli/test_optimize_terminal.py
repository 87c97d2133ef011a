"""The prompts of an interactive run: bad answers ask again, Ctrl-C stops, edits in $EDITOR or from a file."""

from __future__ import annotations

import sys

import pytest
from rich.console import Console
from typer.testing import CliRunner

from kernelpro.cli.optimize_terminal import ask_user

CODE = {"kind": "code", "variant": "abc123", "idea": "compile it", "source": "class ModelNew: pass\n"}
PLAN = {"kind": "plan", "variant": "root", "ideas": [{"title": "inference_mode", "description": "no autograd"}]}


def answer(request: dict, typed: str, editor: str | None = None) -> tuple[dict, str]:
    with CliRunner().isolation(input=typed) as streams:
        out = streams[0]
        console = Console(file=sys.stdout, width=200)
        result = ask_user(console, request, editor)
        return result, out.getvalue().decode()


def test_a_mistyped_path_asks_again_and_the_next_one_is_read(tmp_path):
    edited = tmp_path / "mine.py"
    edited.write_text("class ModelNew: ...\n")
    result, shown = answer(CODE, f"e\n{tmp_path / 'mnie.py'}\n{tmp_path}\n{edited}\n")
    assert result == {"action": "edit", "source": "class ModelNew: ...\n"}
    assert "no such file; give another path" in shown and "it is a directory" in shown


def test_an_unknown_letter_asks_again_and_an_empty_path_goes_back():
    result, shown = answer(CODE, "x\ne\n\ns\n")
    assert result == {"action": "skip"} and "answer a, e, s or t" in shown


def test_ctrl_c_at_a_prompt_stops_the_run_instead_of_failing_it(monkeypatch):
    def interrupted(_prompt: str) -> str:
        raise KeyboardInterrupt

    import typer._click.termui as termui  # where typer's prompt reads a line

    monkeypatch.setattr(termui, "visible_prompt_func", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ask_user(Console(), CODE)


def test_end_of_input_at_a_prompt_stops_too():
    with pytest.raises(KeyboardInterrupt):
        answer(CODE, "e\n")  # the path question finds no more input


def test_a_plan_that_no_model_can_write_is_refused_up_front():
    refused = {**PLAN, "editable": False, "not_editable": "no language model is configured"}
    result, shown = answer(refused, "e\na\n")
    assert result == {"action": "approve"}
    assert "cannot edit this plan: no language model is configured" in shown
    assert "your idea" not in shown  # nothing was asked that would be dropped


def test_edits_open_the_users_editor(tmp_path):
    script = tmp_path / "editor.py"
    script.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text().replace('pass', 'forward = None') + '# mine\\n')\n")
    editor = f'"{sys.executable}" "{script}"'
    result, shown = answer(CODE, "e\n", editor)
    assert result == {"action": "edit", "source": "class ModelNew: forward = None\n# mine\n"}
    assert f"[e]dit in {editor}" in shown
    script.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text() + 'fuse the two passes\\n')\n")
    result, _ = answer(PLAN, "e\n", editor)
    assert result["action"] == "edit" and [i["description"] for i in result["ideas"]] == \
        ["inference_mode: no autograd", "fuse the two passes"]


def test_an_edit_that_changes_nothing_asks_again(tmp_path):
    result, shown = answer(CODE, "e\nt\n", "true")
    assert result == {"action": "stop"} and "nothing changed" in shown


def test_a_run_stopped_at_a_prompt_is_resumed_with_a_new_budget(tmp_path, monkeypatch):
    """`t` at the plan stops the run (130); `--resume ID --max-iters 2` goes back into the loop, to the next
    candidate's prompt, instead of printing "stopped" again."""
    from kernelpro.cli import app
    from kernelpro.exit_codes import INTERRUPTED
    from kernelpro.runs.files import RunFiles
    from tests.conftest import DATA

    monkeypatch.chdir(tmp_path)
    for key in [k for k in __import__("os").environ if k.startswith("KERNELPRO_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("KERNELPRO_HARNESS__REFEREE", "false")
    runs = tmp_path / "runs"
    common = ["--runs-dir", str(runs), "--no-memory"]
    runner = CliRunner()
    first = runner.invoke(app, ["optimize", str(DATA / "problems" / "scale_relu.py"), "--device", "cpu",
                                "--interactive", "--max-iters", "1", "--run-id", "r1", *common], input="t\n")
    assert first.exit_code == INTERRUPTED, first.output
    assert "stopped by the user at the plan" in RunFiles(runs / "r1").root.joinpath("report.md").read_text()
    ending = " ".join(first.output.split())
    assert "stopped before any candidate was judged; resume with: kernelpro optimize --resume r1" in ending
    assert "keep the reference" not in ending  # nothing was judged that could say so
    again = runner.invoke(app, ["optimize", "--resume", "r1", "--max-iters", "2", *common], input="s\nt\n")
    assert again.exit_code == INTERRUPTED, again.output
    assert "run r1 had ended (stopped by the user at the plan); it goes on" in again.output
    assert again.output.count("candidate ") >= 2  # two candidates offered: the run went on past the first
    assert RunFiles(runs / "r1").meta()["budgets"]["max_iters"] == 2


def test_answers_before_a_stop_are_kept_and_the_edit_is_what_is_judged(tmp_path, monkeypatch):
    """Approve the plan, edit a candidate from a file, approve one, skip one, stop at the fourth: the stop says
    nothing was judged yet and how to resume; `--resume` asks only about the fourth and judges the edit."""
    import json
    import re

    from kernelpro.cli import app
    from kernelpro.exit_codes import INTERRUPTED
    from tests.conftest import DATA
    from tests.graphs.helpers import HONEST

    monkeypatch.chdir(tmp_path)
    for key in [k for k in __import__("os").environ if k.startswith("KERNELPRO_")]:
        monkeypatch.delenv(key)
    for key, value in {"KERNELPRO_HARNESS__TIMING_BUDGET_S": "0.3",
                       "KERNELPRO_HARNESS__REFEREE": "false", "KERNELPRO_HARNESS__TIMING_TRIALS": "5",
                       "KERNELPRO_HARNESS__MIN_TIMING_TRIALS": "5", "KERNELPRO_HARNESS__CPU_CONTENTION_CORES": "1e9",
                       "KERNELPRO_SEARCH__FINALISTS": "0",
                       "KERNELPRO_FORECAST__DATASET": str(tmp_path / "judged.jsonl")}.items():
        monkeypatch.setenv(key, value)
    mine = tmp_path / "mine.py"
    mine.write_text(HONEST)
    runs = tmp_path / "runs"
    common = ["--runs-dir", str(runs), "--no-memory"]
    runner = CliRunner()
    first = runner.invoke(app, ["optimize", str(DATA / "problems" / "scale_relu.py"), "--device", "cpu",
                                "--interactive", "--max-iters", "4", "--run-id", "r1", *common],
                          input=f"a\ne\n{mine}\na\ns\nt\n")
    assert first.exit_code == INTERRUPTED, first.output
    edited, approved, skipped, stopped_at = re.findall(r"candidate ([0-9a-f]{8}):", first.output)
    assert f"took your edit: {len(HONEST.splitlines())} lines from {mine}" in first.output
    assert "stopped before any candidate was judged; resume with: kernelpro optimize --resume r1" in \
        " ".join(first.output.split())
    assert "keep the reference" not in first.output.split("finish")[-1]  # nothing was judged to say so

    again = runner.invoke(app, ["optimize", "--resume", "r1", *common], input="s\n")
    assert again.exit_code == INTERRUPTED, again.output  # stopped at the next batch's prompt: the input ended
    before_judging = again.output.split(f"judge {edited}")[0]
    assert re.findall(r"candidate ([0-9a-f]{8}):", before_judging) == [stopped_at]  # the rest were answered
    logged = {e["variant"]: e for e in map(json.loads, (runs / "r1" / "results.jsonl").read_text().splitlines())}
    assert set(logged) == {edited, approved}
    assert logged[edited]["origin"] == "user" and logged[edited]["status"] == "ok"
    assert (runs / "r1" / "candidates" / f"{edited}.py").read_text() == HONEST
