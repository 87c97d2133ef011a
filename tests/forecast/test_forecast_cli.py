"""`kernelpro forecast fit` and `forecast eval --holdout`, and the gate the settings name."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernelpro.app.forecast import build_gate, forecaster_by_name
from kernelpro.cli.main import app
from kernelpro.config import Settings
from kernelpro.forecast.dataset import append_rows
from kernelpro.forecast.gate import ForecastGate
from kernelpro.forecast.model_free import ModelError
from kernelpro.harness.ports import MeasureAll
from tests.forecast.helpers import judged_rows


def test_fit_then_eval_and_a_held_out_eval(tmp_path):
    dataset, model = tmp_path / "judged.jsonl", tmp_path / "model.json"
    append_rows(dataset, judged_rows())
    runner = CliRunner()
    fitted = runner.invoke(app, ["forecast", "fit", str(dataset), "--out", str(model), "--holdout", "0.3"])
    assert fitted.exit_code == 0 and model.is_file(), fitted.output
    assert "fitted on" in fitted.output and "failures left out" in fitted.output
    scored = runner.invoke(app, ["forecast", "eval", str(dataset), "--model", str(model)])
    assert scored.exit_code == 0 and "half-Brier" in scored.output and "model_free (parsed)" in scored.output
    held = runner.invoke(app, ["forecast", "eval", str(dataset), "--holdout", "0.3", "--json"])
    assert held.exit_code == 0, held.output
    data = json.loads(held.output)
    assert [f["forecaster"] for f in data["forecasters"]] == ["model_free", "class_prior"]
    assert "held out" in data["split"] and data["forecasters"][0]["all"]["n"] > 0
    bad = runner.invoke(app, ["forecast", "eval", str(tmp_path / "missing.jsonl")])
    assert bad.exit_code != 0 and "no such dataset file" in bad.output


def test_the_settings_name_the_gate(tmp_path):
    settings = Settings()
    assert isinstance(build_gate(settings, "cpu"), MeasureAll)
    settings.forecast.gate, settings.forecast.model_path = "select", tmp_path / "none.json"
    with pytest.raises(ModelError, match="no fitted forecaster"):
        build_gate(settings, "cpu")
    forecaster_by_name(settings, "model_free", judged_rows(problems=4)).save(settings.forecast.model_path)
    gate = build_gate(settings, "NVIDIA H200")
    assert isinstance(gate, ForecastGate) and gate.name == "forecast-select (model_free)"
    assert gate.bandwidth_gbs == 4800.0
    with pytest.raises(ValueError, match="needs a model"):
        forecaster_by_name(settings, "llm")
    with pytest.raises(ValueError, match="unknown forecaster"):
        forecaster_by_name(settings, "oracle")
