"""`kernelpro data export` in both formats, and the RL rewards that score a reply's text."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernelpro.cli.main import app
from kernelpro.forecast.dataset import DatasetError, append_rows, read_rows
from kernelpro.forecast.rewards import parse_reply, reply_reward
from tests.forecast.helpers import judged_rows


def test_rows_append_and_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "judged.jsonl"
    rows = judged_rows(problems=2, per_problem=2)
    assert append_rows(path, rows[:2]) == 2 and append_rows(path, rows[2:]) == 2
    with path.open("a") as out:
        out.write('{"problem_name": "cut sho')
    assert read_rows(path) == rows
    path.write_text('not json\n' + rows[0].model_dump_json() + "\n")
    with pytest.raises(DatasetError, match=r"judged.jsonl:1: not a judged-candidate row"):
        read_rows(path)


def test_export_for_forecasters_and_for_rl(tmp_path):
    dataset = tmp_path / "judged.jsonl"
    append_rows(dataset, judged_rows(problems=2, per_problem=3))
    runner = CliRunner()
    plain = runner.invoke(app, ["data", "export", str(tmp_path / "f.jsonl"), "--dataset", str(dataset)])
    assert plain.exit_code == 0, plain.output
    examples = [json.loads(line) for line in (tmp_path / "f.jsonl").read_text().splitlines()]
    assert len(examples) == 4 and all(e["target_class"] >= 1 and e["candidate_source"] for e in examples)
    rl = runner.invoke(app, ["data", "export", str(tmp_path / "rl.jsonl"), "--format", "rl", "--dataset",
                             str(dataset), "--failures"])
    assert rl.exit_code == 0, rl.output
    first = json.loads((tmp_path / "rl.jsonl").read_text().splitlines()[0])
    assert first["target_class"] == 0 and [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "NVIDIA H200" in first["messages"][1]["content"] and "class ModelNew" in first["messages"][1]["content"]
    missing = runner.invoke(app, ["data", "export", str(tmp_path / "x.jsonl"), "--dataset", str(tmp_path / "no")])
    assert missing.exit_code != 0 and "no such dataset file" in missing.output


def test_rewards():
    right = '```json\n{"probabilities": [0, 0, 0, 1, 0, 0, 0, 0], "predicted_class": 4}\n```'
    spread = 'I think {"probabilities": [0, 0, 0.5, 0.5, 0, 0, 0, 0]} is it'
    assert [reply_reward(right, 4, k) for k in ("correctness", "brier", "crps")] == [1.0, 2.0, 2.0]
    assert reply_reward(right, 5, "correctness") == 0 and reply_reward(right, 5, "brier") == 0.0
    assert 1.0 < reply_reward(spread, 3, "crps") < 2.0 and reply_reward(spread, 3, "brier") == pytest.approx(1.75)
    for unusable in ("no json", '{"probabilities": [0, 0, 0, 0, 0, 0, 0, 0]}', '{"probabilities": [1, 2]}'):
        assert parse_reply(unusable).parse_failure
        assert all(reply_reward(unusable, 4, k) == 0.0 for k in ("correctness", "brier", "crps"))
