"""`kernelpro cache`: each cache's path, entries and size, and clearing them, on a cache root of the test's own."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kernelpro.cli import app

runner = CliRunner()


def fill(root, tmp_path, monkeypatch) -> dict:
    """A baseline verdict, two compiled kernels, one load_inline build with its staging and lock; a file of the
    user's beside them."""
    monkeypatch.chdir(tmp_path)
    for name in ("KERNELPRO_COMPILE__CACHE_DIR", "KERNELPRO_COMPILE__INLINE_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KERNELPRO_CACHE__ROOT", str(root))
    files = {root / "baselines" / "ab" / f"ab{'0' * 62}.json": "{}",
             root / "compile" / "01" / f"01{'1' * 62}.json": "x" * 100,
             root / "compile" / "02" / f"02{'2' * 62}.json": "x" * 100,
             root / "load-inline" / "3c" / f"3c{'3' * 62}" / "ext.so": "y" * 1000,
             root / "load-inline" / ".staging" / "3c.tmp" / "build.ninja": "z",
             root / "load-inline" / ".locks" / f"3c{'3' * 62}.lock": "",
             root / "compile" / "notes.txt": "the user's"}
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return files


def test_cache_shows_each_cache_with_its_path_entries_and_size(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    fill(root, tmp_path, monkeypatch)
    shown = runner.invoke(app, ["cache", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output) == {"root": str(root), "caches": [
        {"name": "baselines", "path": str(root / "baselines"), "entries": 1, "bytes": 2},
        {"name": "compile", "path": str(root / "compile"), "entries": 2, "bytes": 200},
        {"name": "inline", "path": str(root / "load-inline"), "entries": 1, "bytes": 1001}]}
    assert json.loads(runner.invoke(app, ["cache", "show", "--json"]).output) == json.loads(shown.output)
    text = runner.invoke(app, ["cache"], terminal_width=200)
    assert text.exit_code == 0 and "load-inline" in text.output and "1001 B" in text.output


def test_cache_clear_deletes_only_the_named_caches_entries(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    files = fill(root, tmp_path, monkeypatch)
    cleared = runner.invoke(app, ["cache", "clear", "--baselines", "--inline", "--json"])
    assert cleared.exit_code == 0, cleared.output
    assert [(c["name"], c["entries"]) for c in json.loads(cleared.output)["cleared"]] == [("baselines", 1),
                                                                                          ("inline", 1)]
    left = {path for path in files if path.exists()}
    assert left == {root / "compile" / "01" / f"01{'1' * 62}.json", root / "compile" / "02" / f"02{'2' * 62}.json",
                    root / "load-inline" / ".locks" / f"3c{'3' * 62}.lock", root / "compile" / "notes.txt"}
    everything = runner.invoke(app, ["cache", "clear"])
    assert everything.exit_code == 0 and "cleared compile: 2 entries, 200 B" in everything.output
    assert {path for path in files if path.exists()} == {root / "load-inline" / ".locks" / f"3c{'3' * 62}.lock",
                                                         root / "compile" / "notes.txt"}


def test_cache_clear_refuses_a_cache_directory_that_holds_home(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    files = fill(root, tmp_path, monkeypatch)
    monkeypatch.setenv("KERNELPRO_COMPILE__CACHE_DIR", "/")
    refused = runner.invoke(app, ["cache", "clear", "--all"])
    assert refused.exit_code == 2 and "HOME" in refused.output
    assert all(path.exists() for path in files)  # nothing cleared, the others neither
