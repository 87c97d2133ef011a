"""What `--help` shows for flags and arguments, the shortest names that tell candidates apart, doctor's hint."""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelpro import environment
from kernelpro.cli import app
from kernelpro.cli.eval import distinct_names

runner = CliRunner()


@pytest.mark.parametrize(("command", "usage"), [("eval", "eval [OPTIONS] REFERENCE CANDIDATES..."),
                                                ("optimize", "optimize [OPTIONS] [REFERENCE]")])
def test_help_names_arguments_plainly_and_shows_no_type_after_a_flag(command, usage):
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "160"}, terminal_width=160)
    assert result.exit_code == 0 and usage in result.output
    assert "<bool>" not in result.output and "{" not in result.output.splitlines()[1]
    assert "<list[" not in result.output
    flag = next(line for line in result.output.splitlines() if "│ --json" in line)
    assert "<" not in flag  # a flag takes no value
    assert "DEVICE" in next(line for line in result.output.splitlines() if "│ --device" in line)


def _commands(command, path=()):
    """Every command of the app with its path: ``(("suite", "run"), <command>)``..."""
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))
    else:
        yield path, command


def test_every_option_shows_a_metavar_that_names_its_value_never_a_python_type():
    import click
    import typer

    root = typer.main.get_command(app)
    context = click.Context(root)
    shown = {}
    for path, command in _commands(root):
        for param in command.params:
            value = param.display_type_rich(context)
            if param.param_type_name == "argument":
                assert value is None, (path, param.name, value)  # its NAME says it
            elif getattr(param, "is_flag", False):
                assert value is None, (path, param.opts, value)
            else:
                assert value and re.fullmatch(r"[A-Z][A-Z_]*(\.\.\.)?|\[[a-z_|]+\]", value), (path, param.opts, value)
                shown[(" ".join(path), max(param.opts, key=len))] = value
    assert {shown[("suite run", "--level")], shown[("suite run", "--time-budget")], shown[("optimize", "--max-iters")],
            shown[("suite run", "--runs-dir")], shown[("optimize", "--judged-before")],
            shown[("profile", "--out")]} == {"LEVEL...", "DURATION", "N", "DIR", "FILE"}
    assert shown[("eval", "--timeout")] == "SECONDS" and shown[("forecast eval", "--out")] == "DIR"
    for command in (["suite", "run"], ["forecast", "eval"], ["memory", "search"], ["eval"], ["chat"]):
        result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"}, terminal_width=200)
        assert result.exit_code == 0 and not re.search(r"<[a-z]", result.output), result.output


def test_the_shortest_tail_that_no_other_candidate_shares():
    paths = [Path("runs/a/best.py"), Path("runs/b/best.py"), Path("x/one.py"), Path("deep/a/best.py")]
    assert distinct_names(paths) == ["runs/a/best.py", "b/best.py", "one.py", "deep/a/best.py"]
    assert distinct_names([Path("a.py"), Path("b.py")]) == ["a.py", "b.py"]


class Installed:
    def __init__(self, direct_url: dict | None) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        return json.dumps(self.direct_url) if name == "direct_url.json" and self.direct_url else None


def test_the_triton_hint_follows_how_kernelpro_was_installed(tmp_path, monkeypatch):
    checkout = tmp_path / "kernelpro"
    checkout.mkdir()
    editable = Installed({"url": checkout.as_uri(), "dir_info": {"editable": True}})
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: editable)
    monkeypatch.chdir(checkout)
    assert environment.gpu_extra_install() == 'pip install -e ".[gpu]"'
    monkeypatch.chdir(tmp_path)
    assert environment.gpu_extra_install() == f'pip install -e "{checkout}[gpu]"'
    wheel = Installed({"url": "https://files.example/kernelpro.whl", "archive_info": {}})
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: wheel)
    assert environment.gpu_extra_install() == 'pip install "kernelpro[gpu]"'
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Installed(None))
    assert environment.gpu_extra_install() == 'pip install "kernelpro[gpu]"'


def test_doctor_gives_the_hint_where_triton_is_missing(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(environment, "gpu_extra_install", lambda: 'pip install -e ".[gpu]"')
    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert environment.check_triton().detail == 'not installed (pip install -e ".[gpu]")'
