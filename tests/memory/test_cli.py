"""``kernelpro memory``: search, show, export, import and forget, as a user runs them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernelpro.cli import app
from tests.memory.conftest import SOFTMAX, lessons

runner = CliRunner()


@pytest.fixture
def filled(store, tmp_path, monkeypatch):
    """A store with the sample lessons, and a working directory without a kernelpro.toml."""
    monkeypatch.chdir(tmp_path)
    store.add_many(lessons())
    return store


def invoke(*args: str):
    result = runner.invoke(app, ["memory", *args])
    assert result.exit_code == 0, result.output
    return result


def test_search_json(filled):
    data = json.loads(invoke("search", "warp shuffle row reduction", "--path", str(filled.path), "--json",
                             "--k", "2").stdout)
    assert data["query"] == "warp shuffle row reduction" and len(data["results"]) == 2
    assert {r["id"] for r in data["results"]} == {lessons()[0].id, lessons()[1].id}
    assert all(r["problem"]["name"] == SOFTMAX.name and r["score"] > 0 for r in data["results"])


def test_search_filters_and_table(filled):
    data = json.loads(invoke("search", "tiles", "--path", str(filled.path), "--gpu", "A100", "--json").stdout)
    assert [r["id"] for r in data["results"]] == [lessons()[4].id]
    data = json.loads(invoke("search", "warp shuffle row reduction", "--path", str(filled.path), "--problem",
                             SOFTMAX.name, "--kind", "insight", "--json").stdout)
    assert [r["id"] for r in data["results"]] == [lessons()[1].id]
    table = invoke("search", "GEMM tile sizes", "--path", str(filled.path), "--k", "3").stdout
    assert "memory search" in table and "gemm_fp16" in table
    result = runner.invoke(app, ["memory", "search", "x", "--path", str(filled.path), "--kind", "lesson"])
    assert result.exit_code == 2 and "--kind must be one of" in result.output


def test_show(filled):
    data = json.loads(invoke("show", "--path", str(filled.path), "--json", "--limit", "2").stdout)
    assert data["total"] == 6 and data["counts"] == {"attempt": 3, "insight": 2, "compile_fix": 1}
    assert len(data["recent"]) == 2 and data["path"] == str(filled.path)
    text = invoke("show", "--path", str(filled.path)).stdout
    assert "6 records in" in text and "3 attempt, 2 insight, 1 compile_fix" in text


def test_export_import_forget(filled, tmp_path):
    exported = tmp_path / "lessons.jsonl"
    assert "exported 6 records" in invoke("export", str(exported), "--path", str(filled.path)).stdout
    elsewhere = str(tmp_path / "elsewhere")
    assert "imported 6 new records (0 already present)" in invoke("import", str(exported), "--path", elsewhere).stdout
    assert "imported 0 new records (6 already present)" in invoke("import", str(exported), "--path", elsewhere).stdout
    assert "forgot 4 records of run run-2" in invoke("forget", "--run", "run-2", "--path", elsewhere).stdout
    data = json.loads(invoke("show", "--path", elsewhere, "--json").stdout)
    assert data["total"] == 2


def test_errors_are_reported_not_raised(filled, tmp_path):
    missing = tmp_path / "missing"
    for args in (["show"], ["search", "x"], ["export", str(tmp_path / "x.jsonl")], ["forget", "--run", "r"]):
        result = runner.invoke(app, ["memory", *args, "--path", str(missing)])
        assert result.exit_code == 2 and "no memory store at" in result.output
    assert not missing.exists()
    result = runner.invoke(app, ["memory", "import", str(tmp_path / "nope.jsonl"), "--path", str(filled.path)])
    assert result.exit_code == 2 and "no such file" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    result = runner.invoke(app, ["memory", "import", str(bad), "--path", str(filled.path)])
    assert result.exit_code == 2 and "bad.jsonl:1: not valid JSON" in result.output


def test_the_store_location_comes_from_settings(filled, monkeypatch):
    monkeypatch.setenv("KERNELPRO_MEMORY__PATH", str(filled.path))
    assert json.loads(invoke("show", "--json").stdout)["total"] == 6
    monkeypatch.setenv("KERNELPRO_MEMORY__EMBEDDING_MODEL", "no-such-model")
    result = runner.invoke(app, ["memory", "show"])
    assert result.exit_code == 2 and "unknown embedding model 'no-such-model'" in result.output
