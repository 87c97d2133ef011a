"""`kernelpro model`: a model's regions optimised as a suite, spliced back and judged end to end."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelpro.cli.main import app
from kernelpro.exit_codes import BAD_INPUT
from tests.cli.test_suite import cli, environment, last_json
from tests.conftest import DATA

runner = CliRunner()
MODELS = DATA / "models"


def test_a_model_is_profiled_cut_optimised_as_a_suite_and_judged_end_to_end(tmp_path):
    env, runs = environment(tmp_path), tmp_path / "runs"
    proc = cli(["model", str(MODELS / "residual_mlp.py"), "--device", "cpu", "--top", "1", "--max-iters", "1",
                "--no-memory", "--runs-dir", str(runs), "--json"], env, tmp_path)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    line = last_json(out)
    assert line["status"] in ("completed", "no_improvement")
    regions = line["regions"]
    # the blocks hold most of the work, but which regions lead on a busy machine is the profiler's noise
    assert {"blocks.0", "blocks.1"} <= {r["name"] for r in regions}
    assert [r["share"] for r in regions] == sorted((r["share"] for r in regions), reverse=True)
    assert abs(sum(r["share"] for r in regions) - 1) < 1e-6
    [optimised] = [r for r in regions if r["problem"]]
    assert optimised["name"] == regions[0]["name"] and Path(optimised["problem"]).is_file()
    run_dir = Path(line["run_dir"])
    assert (run_dir / "suites" / line["suite_id"] / "ledger.sqlite").is_file()
    assert Path(line["report"]).read_text().startswith("# residual_mlp")
    if optimised["spliced"]:  # the recipe beat the region on this machine: the whole model was judged
        assert line["end_to_end_correct"] is True and Path(line["patched_model"]).is_file()
    else:
        assert line["end_to_end_speedup"] is None and line["patched_model"] is None
    assert json.loads((run_dir / "model.json").read_text())["suite_id"] == line["suite_id"]


@pytest.mark.parametrize(("args", "said"), [
    ([f"{MODELS / 'small_cnn.py'}:build"], "--inputs FILE.py:fn"),
    ([str(MODELS / "residual_mlp.py"), "--inputs", f"{MODELS / 'small_cnn.py'}:example_inputs"], "own get_inputs"),
    ([f"{MODELS / 'small_cnn.py'}:nothing", "--inputs", f"{MODELS / 'small_cnn.py'}:example_inputs"],
     "no factory 'nothing'"),
    ([str(MODELS / "missing.py")], "no such file"),
    (["--resume", "model-nothing"], "no model run 'model-nothing'"),
    ([str(MODELS / "residual_mlp.py"), "--top", "0"], "--top 0"),
])
def test_what_cannot_be_a_model_run_is_refused_before_anything_runs(tmp_path, args, said):
    result = runner.invoke(app, ["model", *args, "--device", "cpu", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == BAD_INPUT and said in " ".join(result.output.split())
    assert not list((tmp_path / "runs").glob("*/model.json"))


def test_a_hugging_face_config_without_its_model_type_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    result = runner.invoke(app, ["model", str(tmp_path), "--device", "cpu", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == BAD_INPUT and "model_type" in result.output


def test_a_hugging_face_model_without_transformers_installed_says_what_to_install(tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    monkeypatch.setitem(__import__("sys").modules, "transformers", None)  # import transformers: ImportError
    result = runner.invoke(app, ["model", str(tmp_path), "--device", "cpu", "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == BAD_INPUT and "pip install transformers" in result.output


def test_a_resumed_model_run_gives_its_suite_only_new_totals():
    from kernelpro.cli.model import _suite_options

    new, resumed = _suite_options("recipes", None, 2, "1h", None, 0.5, None, None, True, False)
    assert new == ["--policy", "recipes", "--max-iters", "2", "--time-budget", "1h", "--usd-budget", "0.5",
                   "--no-memory"]
    assert resumed == ["--time-budget", "1h", "--usd-budget", "0.5"]


def test_a_tiny_gpt2_from_its_config_is_exported_optimised_and_judged_end_to_end(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = tmp_path / "gpt2"
    transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=128, n_positions=64).save_pretrained(config)
    env, runs = {**environment(tmp_path), "HF_HUB_OFFLINE": "1"}, tmp_path / "runs"
    proc = cli(["model", str(config), "--seq-len", "16", "--device", "cpu", "--top", "1", "--max-iters", "1",
                "--no-memory", "--runs-dir", str(runs), "--json"], env, tmp_path)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    line = last_json(out)
    assert line["status"] in ("completed", "no_improvement")
    regions = {r["name"]: r for r in line["regions"]}
    assert {"model.h.0", "model.h.1", "model.ln_f"} <= set(regions)
    [optimised] = [r for r in line["regions"] if r["problem"]]
    problem = Path(optimised["problem"]).read_text()
    assert "transformers" not in problem.split("class Model")[0]  # plain torch: the judge needs no transformers
    if optimised["spliced"]:
        assert line["end_to_end_correct"] is True and "traced_by_export" in Path(line["patched_model"]).read_text()
    else:
        assert line["end_to_end_speedup"] is None and optimised["note"]
