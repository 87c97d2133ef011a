"""What the command line reads from its arguments before the parser sees them."""

from __future__ import annotations

from kernelpro.cli.inputs import spread_option_values


def test_several_levels_after_one_option_are_spread(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert spread_option_values(["suite", "run", "KB", "--level", "1", "2", "3", "--overnight"]) == [
        "suite", "run", "KB", "--level", "1", "--level", "2", "--level", "3", "--overnight"]


def test_a_digit_that_names_a_path_stays_a_source(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "2").mkdir()
    assert spread_option_values(["run", "--level", "1", "2", "3"]) == ["run", "--level", "1", "2", "3"]


def test_anything_else_is_left_for_the_parser(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert spread_option_values(["run", "--level", "1", "x", "2"]) == ["run", "--level", "1", "x", "2"]
    assert spread_option_values(["run", "--level", "x", "1"]) == ["run", "--level", "x", "1"]
    assert spread_option_values(["run", "--level", "1", "--", "3"]) == ["run", "--level", "1", "--", "3"]
    assert spread_option_values(["run", "--level"]) == ["run", "--level"]


def test_the_command_line_reads_three_levels_from_one_option(tmp_path, monkeypatch):
    """Through the real parser: ``--level 1 2 3`` reaches the suite as three levels, not as sources 2 and 3."""
    import typer

    from kernelpro.cli.main import run

    seen = {}
    probe = typer.Typer()

    @probe.command()
    def command(sources: list[str] = typer.Argument(None), level: list[int] = typer.Option(None, "--level")):
        seen.update(sources=sources, level=level)

    monkeypatch.chdir(tmp_path)
    assert run(["KB", "--level", "1", "2", "3"], command=probe) == 0
    assert seen == {"sources": ["KB"], "level": [1, 2, 3]}
